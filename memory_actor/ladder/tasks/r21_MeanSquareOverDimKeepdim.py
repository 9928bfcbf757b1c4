# family: row_reduction
"""Mean of x squared over one axis of a 3-d tensor, keeping the axis with length 1."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """out = mean of x * x along axis `dim` (0, 1, 2 or negative), keepdim=True."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.mean(x * x, dim=self.dim, keepdim=True)


batch_size = 16
dim1 = 64
dim2 = 96
dim = 0  # the reduction axis, not a size


def get_inputs():
    x = torch.randn(batch_size, dim1, dim2)
    return [x]


def get_init_inputs():
    return [dim]
