"""(a - b) squared, elementwise, of two tensors of one shape."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """out = (a - b) ** 2."""

    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return (a - b) * (a - b)


rows = 64
cols = 4096


def get_inputs():
    a = torch.randn(rows, cols)
    b = torch.randn(rows, cols)
    return [a, b]


def get_init_inputs():
    return []
