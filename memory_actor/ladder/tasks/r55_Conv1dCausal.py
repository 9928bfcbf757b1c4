# family: conv
"""Causal 1-d convolution with bias over (batch, channels, length): each output sees only the present and the past."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """out[b, o, t] = bias[o] + sum over c, k of weight[o, c, k] * x[b, c, t - (kernel_size - 1) + k] (zero before 0)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size, padding=kernel_size - 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)[:, :, : x.shape[-1]]


batch_size = 4
in_channels = 8
out_channels = 16
length = 300
kernel_size = 4


def get_inputs():
    x = torch.randn(batch_size, in_channels, length)
    return [x]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
