"""Sum of cubes along a given dimension of a 3-d tensor; that dimension is dropped."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """out = sum(x ** 3, dim)."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sum(x * x * x, dim=self.dim)


batch_size = 16
dim1 = 256
dim2 = 128
dim = 1  # the reduction axis, not a size


def get_inputs():
    x = torch.randn(batch_size, dim1, dim2)
    return [x]


def get_init_inputs():
    return [dim]
