# family: elementwise
"""Absolute difference of two tensors of the same shape."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Returns |x - y|, element by element."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.abs(x - y)


rows = 64
cols = 1024


def get_inputs():
    x = torch.randn(rows, cols)
    y = torch.randn(rows, cols)
    return [x, y]


def get_init_inputs():
    return []
