# family: matmul
"""Absolute value of a matrix product."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """C = |A @ B| with A of shape (M, K) and B of shape (K, N); C is (M, N)."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.abs(torch.matmul(A, B))


M = 96
K = 128
N = 80


def get_inputs():
    A = torch.randn(M, K)
    B = torch.randn(K, N)
    return [A, B]


def get_init_inputs():
    return []
