"""Inclusive prefix sum down the rows (axis 0) of a 2-d tensor."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """out[i, :] = sum of x[:i + 1, :] along axis `dim` (0 here)."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cumsum(x, dim=self.dim)


length = 4096
batch_size = 128
dim = 0  # the scan axis, not a size


def get_inputs():
    x = torch.randn(length, batch_size)
    return [x]


def get_init_inputs():
    return [dim]
