"""Largest absolute value along a given dimension of a 3-d tensor; that dimension is dropped."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """out = amax(|x|, dim)."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.amax(torch.abs(x), dim=self.dim)


batch_size = 16
dim1 = 128
dim2 = 256
dim = 2  # the reduction axis, not a size


def get_inputs():
    x = torch.randn(batch_size, dim1, dim2)
    return [x]


def get_init_inputs():
    return [dim]
