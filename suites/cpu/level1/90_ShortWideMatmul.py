"""Product of a short, wide matrix and a tall one (large inner size)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """C = A @ B with A of shape (M, K), B of shape (K, N) and M, N small."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


M = 32
K = 2048
N = 256


def get_inputs():
    A = torch.randn(M, K)
    B = torch.randn(K, N)
    return [A, B]


def get_init_inputs():
    return []
