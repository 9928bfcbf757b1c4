"""Sum over the first axis of a 3-d tensor; the reduced axis is dropped."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """torch.sum along axis `dim` (the first one here), keepdim=False."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sum(x, dim=self.dim)


batch_size = 32
dim1 = 256
dim2 = 256
dim = 0  # the reduction axis, not a size


def get_inputs():
    x = torch.randn(batch_size, dim1, dim2)
    return [x]


def get_init_inputs():
    return [dim]
