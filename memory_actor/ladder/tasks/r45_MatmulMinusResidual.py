# family: matmul
"""Matrix product minus a residual matrix of the product's shape."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """C = A @ B - R with A (M, K), B (K, N) and R (M, N), an input."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor, R: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B) - R


M = 96
K = 128
N = 80


def get_inputs():
    A = torch.randn(M, K)
    B = torch.randn(K, N)
    R = torch.randn(M, N)
    return [A, B, R]


def get_init_inputs():
    return []
