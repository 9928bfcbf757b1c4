"""Transposed matrix times a column vector."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """y = A.T @ v with A of shape (K, M) and v of shape (K, 1)."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A.T, v)


K = 2048
M = 2048


def get_inputs():
    A = torch.randn(K, M)
    v = torch.randn(K, 1)
    return [A, v]


def get_init_inputs():
    return []
