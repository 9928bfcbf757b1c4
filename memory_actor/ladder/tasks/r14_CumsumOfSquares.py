# family: scan
"""Running sum of squares along one axis given to the constructor."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """out[..., i] = sum of x[..., :i + 1] ** 2 along axis `dim` (a negative dim counts from the end)."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cumsum(x * x, dim=self.dim)


length = 256
batch_size = 64
dim = -2  # the scan axis, not a size: down the columns, axis 0


def get_inputs():
    x = torch.randn(length, batch_size)
    return [x]


def get_init_inputs():
    return [dim]
