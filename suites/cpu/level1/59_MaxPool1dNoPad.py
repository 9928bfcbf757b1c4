"""1-d max pooling over (batch, channels, length), non-overlapping windows, no padding."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """nn.MaxPool1d with kernel_size == stride and no padding."""

    def __init__(self, kernel_size: int):
        super().__init__()
        self.pool = nn.MaxPool1d(kernel_size=kernel_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(x)


batch_size = 32
channels = 64
length = 1024
kernel_size = 2


def get_inputs():
    x = torch.randn(batch_size, channels, length)
    return [x]


def get_init_inputs():
    return [kernel_size]
