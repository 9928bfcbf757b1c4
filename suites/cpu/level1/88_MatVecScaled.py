"""Matrix times a column vector, scaled by a constructor constant."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """y = alpha * (A @ v) with A (M, K), v (K, 1)."""

    def __init__(self, alpha: float):
        super().__init__()
        self.alpha = alpha

    def forward(self, A: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return self.alpha * torch.matmul(A, v)


M = 2048
K = 2048
alpha = 0.5


def get_inputs():
    A = torch.randn(M, K)
    v = torch.randn(K, 1)
    return [A, v]


def get_init_inputs():
    return [alpha]
