"""1-d convolution, exact GELU, then the mean over the length axis."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """mean(gelu(conv1d(x)), dim=2), shape (batch_size, out_channels)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.mean(F.gelu(self.conv(x)), dim=2)


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
