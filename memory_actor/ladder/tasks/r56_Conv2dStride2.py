# family: conv
"""2-d convolution with bias over NCHW images, stride 2, no padding."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """nn.Conv2d(in_channels, out_channels, kernel_size, stride=2) with a square kernel."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride=2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


batch_size = 2
in_channels = 4
out_channels = 16
height = 34
width = 30
kernel_size = 3


def get_inputs():
    x = torch.randn(batch_size, in_channels, height, width)
    return [x]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
