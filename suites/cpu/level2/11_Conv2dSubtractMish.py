"""Convolution, subtraction of a constant, then Mish: x * tanh(softplus(x))."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """mish(conv2d(x) - subtract_value)."""

    def __init__(
        self, in_channels: int, out_channels: int, kernel_size: int, subtract_value: float
    ):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.subtract_value = subtract_value

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.mish(self.conv(x) - self.subtract_value)


batch_size = 8
in_channels = 8
out_channels = 16
height = 64
width = 64
kernel_size = 3
subtract_value = 0.25


def get_inputs():
    x = torch.randn(batch_size, in_channels, height, width)
    return [x]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, subtract_value]
