# family: row_reduction
"""Mean of |x| over one axis of a 3-d tensor; the reduced axis is dropped."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """out = mean of |x| along axis `dim` (0, 1, 2 or negative), keepdim=False."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.mean(torch.abs(x), dim=self.dim)


batch_size = 16
dim1 = 64
dim2 = 96
dim = 1  # the reduction axis, not a size


def get_inputs():
    x = torch.randn(batch_size, dim1, dim2)
    return [x]


def get_init_inputs():
    return [dim]
