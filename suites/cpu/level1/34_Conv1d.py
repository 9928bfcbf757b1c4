"""1-d convolution with bias over (batch, channels, length), 'same' padding."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """nn.Conv1d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


batch_size = 16
in_channels = 16
out_channels = 32
length = 1024
kernel_size = 5


def get_inputs():
    x = torch.randn(batch_size, in_channels, length)
    return [x]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
