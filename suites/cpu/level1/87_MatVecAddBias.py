"""Matrix times a column vector plus a bias column."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """y = A @ v + b with A (M, K), v (K, 1) and b (M, 1), an input."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, v: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, v) + b


M = 2048
K = 2048


def get_inputs():
    A = torch.randn(M, K)
    v = torch.randn(K, 1)
    b = torch.randn(M, 1)
    return [A, v, b]


def get_init_inputs():
    return []
