# family: window
"""Sum pooling along the last axis of (batch, channels, length): non-overlapping windows, no padding."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """out[b, c, t] = sum of x[b, c, t*kernel_size : (t + 1)*kernel_size]; a short tail window is dropped."""

    def __init__(self, kernel_size: int):
        super().__init__()
        self.kernel_size = kernel_size

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.avg_pool1d(x, kernel_size=self.kernel_size) * self.kernel_size


batch_size = 4
channels = 16
length = 1000
kernel_size = 3


def get_inputs():
    x = torch.randn(batch_size, channels, length)
    return [x]


def get_init_inputs():
    return [kernel_size]
