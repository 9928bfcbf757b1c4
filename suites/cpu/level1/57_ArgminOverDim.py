"""Index of the minimum over one axis of a 3-d tensor (int64 result)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """torch.argmin along axis `dim`, the axis dropped."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.argmin(x, dim=self.dim)


batch_size = 32
dim1 = 256
dim2 = 256
dim = 1  # the reduction axis, not a size


def get_inputs():
    x = torch.randn(batch_size, dim1, dim2)
    return [x]


def get_init_inputs():
    return [dim]
