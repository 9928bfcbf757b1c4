"""Elementwise (Hadamard) product of two tensors of the same shape."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Returns a * b."""

    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a * b


batch_size = 128
dim = 16384


def get_inputs():
    a = torch.randn(batch_size, dim)
    b = torch.randn(batch_size, dim)
    return [a, b]


def get_init_inputs():
    return []
