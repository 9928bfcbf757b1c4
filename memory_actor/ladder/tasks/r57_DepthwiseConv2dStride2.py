# family: conv
"""Depthwise 2-d convolution with stride 2: one filter per channel, no bias, padding kernel_size // 2."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """nn.Conv2d with groups == channels and stride 2, so channels never mix and each side halves."""

    def __init__(self, channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv2d(
            channels, channels, kernel_size, stride=2, padding=kernel_size // 2, groups=channels, bias=False
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


batch_size = 2
channels = 16
height = 36
width = 40
kernel_size = 3


def get_inputs():
    x = torch.randn(batch_size, channels, height, width)
    return [x]


def get_init_inputs():
    return [channels, kernel_size]
