"""1-d average pooling with zero padding counted in the average."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """nn.AvgPool1d; padded zeros count toward the divisor (count_include_pad=True)."""

    def __init__(self, kernel_size: int, stride: int, padding: int):
        super().__init__()
        self.pool = nn.AvgPool1d(kernel_size=kernel_size, stride=stride, padding=padding)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(x)


batch_size = 32
channels = 64
length = 1024
kernel_size = 5
stride = 2
padding = 2


def get_inputs():
    x = torch.randn(batch_size, channels, length)
    return [x]


def get_init_inputs():
    return [kernel_size, stride, padding]
