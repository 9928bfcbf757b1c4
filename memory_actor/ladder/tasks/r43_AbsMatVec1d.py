# family: matmul
"""Absolute value of a matrix times a 1-d vector."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """y = |A @ v| with A of shape (M, K) and v of shape (K,); y has shape (M,)."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return torch.abs(torch.matmul(A, v))


M = 256
K = 192


def get_inputs():
    A = torch.randn(M, K)
    v = torch.randn(K)
    return [A, v]


def get_init_inputs():
    return []
