"""Convolution, tanh, multiplication by a constant, then a per-channel bias."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """tanh(conv2d(x)) * scaling_factor + bias, bias of shape (out_channels, 1, 1)."""

    def __init__(
        self, in_channels: int, out_channels: int, kernel_size: int, scaling_factor: float
    ):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)
        self.scaling_factor = scaling_factor
        self.bias = nn.Parameter(0.1 * torch.randn(out_channels, 1, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.conv(x)) * self.scaling_factor + self.bias


batch_size = 8
in_channels = 8
out_channels = 16
height = 64
width = 64
kernel_size = 3
scaling_factor = 1.5


def get_inputs():
    x = torch.randn(batch_size, in_channels, height, width)
    return [x]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, scaling_factor]
