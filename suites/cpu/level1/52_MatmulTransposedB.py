"""Matrix product whose right operand is stored transposed."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """C = A @ B.T with A of shape (M, K) and B of shape (N, K)."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B.T)


M = 384
K = 256
N = 320


def get_inputs():
    A = torch.randn(M, K)
    B = torch.randn(N, K)
    return [A, B]


def get_init_inputs():
    return []
