# family: window
"""2-d min pooling over NCHW images with a square window, a stride and padding that never wins."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """out[b, c, i, j] = min of x[b, c] over rows i*stride - padding + [0, kernel_size) and the same in columns."""

    def __init__(self, kernel_size: int, stride: int, padding: int):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return -F.max_pool2d(-x, kernel_size=self.kernel_size, stride=self.stride, padding=self.padding)


batch_size = 2
channels = 16
height = 40
width = 36
kernel_size = 3
stride = 2
padding = 1


def get_inputs():
    x = torch.randn(batch_size, channels, height, width)
    return [x]


def get_init_inputs():
    return [kernel_size, stride, padding]
