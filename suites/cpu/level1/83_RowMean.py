"""Mean over the columns of a 2-d tensor: one mean per row."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """torch.mean along axis `dim` (1: over each row), keepdim=False."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.mean(x, dim=self.dim)


rows = 1024
cols = 2048
dim = 1  # the reduction axis, not a size


def get_inputs():
    x = torch.randn(rows, cols)
    return [x]


def get_init_inputs():
    return [dim]
