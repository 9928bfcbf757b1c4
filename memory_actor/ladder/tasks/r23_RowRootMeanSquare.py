# family: row_reduction
"""Root mean square along one axis of a 2-d tensor: one value per row; the axis is dropped."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """out = sqrt(mean of x * x along axis `dim`) (1: over each row), keepdim=False."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sqrt(torch.mean(x * x, dim=self.dim))


rows = 256
cols = 512
dim = 1  # the reduction axis, not a size


def get_inputs():
    x = torch.randn(rows, cols)
    return [x]


def get_init_inputs():
    return [dim]
