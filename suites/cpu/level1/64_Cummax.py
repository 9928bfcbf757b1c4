"""Running maximum along one axis (values only, no indices)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """out[..., i] = max of x[..., :i + 1] along axis `dim`."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cummax(x, dim=self.dim).values


batch_size = 128
length = 4096
dim = 1  # the scan axis, not a size


def get_inputs():
    x = torch.randn(batch_size, length)
    return [x]


def get_init_inputs():
    return [dim]
