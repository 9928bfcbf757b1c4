"""Exclusive prefix sum along one axis: the sum of everything before each element."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """out[..., i] = sum of x[..., :i] along axis `dim` (0 at i = 0)."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cumsum(x, dim=self.dim) - x


batch_size = 128
length = 4096
dim = 1  # the scan axis, not a size


def get_inputs():
    x = torch.randn(batch_size, length)
    return [x]


def get_init_inputs():
    return [dim]
