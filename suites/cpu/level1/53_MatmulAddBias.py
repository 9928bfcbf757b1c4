"""Matrix product plus a bias row broadcast over the rows."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """C = A @ B + bias with bias of shape (N,), an input."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B) + bias


M = 256
K = 384
N = 256


def get_inputs():
    A = torch.randn(M, K)
    B = torch.randn(K, N)
    bias = torch.randn(N)
    return [A, B, bias]


def get_init_inputs():
    return []
