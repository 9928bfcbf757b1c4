"""Depthwise 2-d convolution: one filter per channel, no bias, 'same' padding."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """nn.Conv2d with groups == channels, so channels never mix."""

    def __init__(self, channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv2d(
            channels, channels, kernel_size, padding=kernel_size // 2, groups=channels, bias=False
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


batch_size = 16
channels = 32
height = 64
width = 64
kernel_size = 3


def get_inputs():
    x = torch.randn(batch_size, channels, height, width)
    return [x]


def get_init_inputs():
    return [channels, kernel_size]
