# family: matmul
"""Absolute value of a batch of independent matrix products."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """C[b] = |A[b] @ B[b]| with A (batch, M, K) and B (batch, K, N); C is (batch, M, N)."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.abs(torch.bmm(A, B))


batch_size = 16
M = 48
K = 64
N = 40


def get_inputs():
    A = torch.randn(batch_size, M, K)
    B = torch.randn(batch_size, K, N)
    return [A, B]


def get_init_inputs():
    return []
