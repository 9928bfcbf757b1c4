"""Product over the last axis of a 3-d tensor, on factors close to one; the axis is dropped."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """torch.prod along axis `dim` (the last one here)."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.prod(x, dim=self.dim)


batch_size = 32
dim1 = 256
dim2 = 256
dim = 2  # the reduction axis, not a size


def get_inputs():
    # Factors in [0.9, 1.1): products of 256 neither vanish nor overflow.
    x = 0.9 + 0.2 * torch.rand(batch_size, dim1, dim2)
    return [x]


def get_init_inputs():
    return [dim]
