"""1-d max pooling over (batch, channels, length) with padding."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """nn.MaxPool1d(kernel_size, stride, padding); padded positions never win."""

    def __init__(self, kernel_size: int, stride: int, padding: int):
        super().__init__()
        self.pool = nn.MaxPool1d(kernel_size=kernel_size, stride=stride, padding=padding)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(x)


batch_size = 32
channels = 64
length = 1024
kernel_size = 4
stride = 2
padding = 1


def get_inputs():
    x = torch.randn(batch_size, channels, length)
    return [x]


def get_init_inputs():
    return [kernel_size, stride, padding]
