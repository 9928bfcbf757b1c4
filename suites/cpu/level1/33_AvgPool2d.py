"""2-d average pooling over NCHW images, non-overlapping windows."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """nn.AvgPool2d with a square window and stride."""

    def __init__(self, kernel_size: int, stride: int):
        super().__init__()
        self.pool = nn.AvgPool2d(kernel_size=kernel_size, stride=stride)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(x)


batch_size = 16
channels = 32
height = 64
width = 64
kernel_size = 2
stride = 2


def get_inputs():
    x = torch.randn(batch_size, channels, height, width)
    return [x]


def get_init_inputs():
    return [kernel_size, stride]
