"""Mean over the last axis of a 3-d tensor, keeping the axis with length 1."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """torch.mean along axis `dim` (the last one here), keepdim=True."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.mean(x, dim=self.dim, keepdim=True)


batch_size = 32
dim1 = 256
dim2 = 256
dim = 2  # the reduction axis, not a size


def get_inputs():
    x = torch.randn(batch_size, dim1, dim2)
    return [x]


def get_init_inputs():
    return [dim]
