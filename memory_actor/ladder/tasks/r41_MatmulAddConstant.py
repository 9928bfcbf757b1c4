# family: matmul
"""Matrix product plus a constructor constant added to every element."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """C = A @ B + shift with A (M, K), B (K, N) and shift a float."""

    def __init__(self, shift: float):
        super().__init__()
        self.shift = shift

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B) + self.shift


M = 96
K = 128
N = 80
shift = 0.75


def get_inputs():
    A = torch.randn(M, K)
    B = torch.randn(K, N)
    return [A, B]


def get_init_inputs():
    return [shift]
