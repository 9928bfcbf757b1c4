"""2-d average pooling over NCHW images, 3x3 windows, stride 1, zero padding counted."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """nn.AvgPool2d(kernel_size, stride=1, padding=kernel_size // 2); the output keeps the input's size."""

    def __init__(self, kernel_size: int):
        super().__init__()
        self.pool = nn.AvgPool2d(kernel_size=kernel_size, stride=1, padding=kernel_size // 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(x)


batch_size = 16
channels = 32
height = 64
width = 64
kernel_size = 3


def get_inputs():
    x = torch.randn(batch_size, channels, height, width)
    return [x]


def get_init_inputs():
    return [kernel_size]
