"""Minimum value over the last axis of a 3-d tensor (values only); the axis is dropped."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """torch.min along axis `dim` (the last one here), values only."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.min(x, dim=self.dim).values


batch_size = 32
dim1 = 256
dim2 = 256
dim = 2  # the reduction axis, not a size


def get_inputs():
    x = torch.randn(batch_size, dim1, dim2)
    return [x]


def get_init_inputs():
    return [dim]
