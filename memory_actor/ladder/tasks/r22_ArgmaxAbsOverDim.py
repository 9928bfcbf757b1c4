# family: row_reduction
"""Index of the largest |x| over one axis of a 3-d tensor (int64 result)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Position of the largest |x| along axis `dim` (the first one on ties); the axis is dropped."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.argmax(torch.abs(x), dim=self.dim)


batch_size = 16
dim1 = 64
dim2 = 96
dim = 2  # the reduction axis, not a size


def get_inputs():
    x = torch.randn(batch_size, dim1, dim2)
    return [x]


def get_init_inputs():
    return [dim]
