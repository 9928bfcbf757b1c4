"""2-d max pooling over NCHW images, non-overlapping 2x2 windows, no padding."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """nn.MaxPool2d with kernel_size == stride and no padding."""

    def __init__(self, kernel_size: int):
        super().__init__()
        self.pool = nn.MaxPool2d(kernel_size=kernel_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(x)


batch_size = 16
channels = 32
height = 64
width = 64
kernel_size = 2


def get_inputs():
    x = torch.randn(batch_size, channels, height, width)
    return [x]


def get_init_inputs():
    return [kernel_size]
