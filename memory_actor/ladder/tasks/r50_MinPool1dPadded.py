# family: window
"""Min pooling along the last axis of (batch, channels, length), with padding that never wins."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """out[b, c, t] = min of x[b, c, t*stride - padding : t*stride - padding + kernel_size], padded positions left out."""

    def __init__(self, kernel_size: int, stride: int, padding: int):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return -F.max_pool1d(-x, kernel_size=self.kernel_size, stride=self.stride, padding=self.padding)


batch_size = 4
channels = 16
length = 1000
kernel_size = 5
stride = 2
padding = 2


def get_inputs():
    x = torch.randn(batch_size, channels, length)
    return [x]


def get_init_inputs():
    return [kernel_size, stride, padding]
