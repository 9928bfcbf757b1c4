# family: matmul
"""Matrix product with each output column scaled by its own factor."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """C = (A @ B) * s with A (M, K), B (K, N) and s of shape (N,), an input: C[i, j] = s[j] * (A @ B)[i, j]."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B) * s


M = 96
K = 128
N = 80


def get_inputs():
    A = torch.randn(M, K)
    B = torch.randn(K, N)
    s = torch.randn(N)
    return [A, B, s]


def get_init_inputs():
    return []
