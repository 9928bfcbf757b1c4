# family: window
"""2-d min pooling over NCHW images, stride 1, padding kernel_size // 2 that never wins."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """out[b, c, i, j] = min of x[b, c] over the kernel_size x kernel_size window centred at (i, j), padding left out."""

    def __init__(self, kernel_size: int):
        super().__init__()
        self.kernel_size = kernel_size

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        k = self.kernel_size
        return -F.max_pool2d(-x, kernel_size=k, stride=1, padding=k // 2)


batch_size = 2
channels = 16
height = 32
width = 48
kernel_size = 3


def get_inputs():
    x = torch.randn(batch_size, channels, height, width)
    return [x]


def get_init_inputs():
    return [kernel_size]
