"""Matrix product whose left operand is stored transposed."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """C = A.T @ B with A of shape (K, M) and B of shape (K, N)."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A.T, B)


M = 256
K = 384
N = 320


def get_inputs():
    A = torch.randn(K, M)
    B = torch.randn(K, N)
    return [A, B]


def get_init_inputs():
    return []
