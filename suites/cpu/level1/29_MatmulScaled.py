"""Matrix product scaled by a constructor constant."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """C = alpha * (A @ B)."""

    def __init__(self, alpha: float):
        super().__init__()
        self.alpha = alpha

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B) * self.alpha


M = 256
K = 256
N = 256
alpha = 0.125


def get_inputs():
    A = torch.randn(M, K)
    B = torch.randn(K, N)
    return [A, B]


def get_init_inputs():
    return [alpha]
