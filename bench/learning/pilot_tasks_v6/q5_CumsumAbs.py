"""Running sum of absolute values along a given dimension of a 2-d tensor."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """out = cumsum(|x|, dim)."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cumsum(torch.abs(x), dim=self.dim)


batch_size = 64
length = 512
dim = 1  # the scan axis, not a size


def get_inputs():
    x = torch.randn(batch_size, length)
    return [x]


def get_init_inputs():
    return [dim]
