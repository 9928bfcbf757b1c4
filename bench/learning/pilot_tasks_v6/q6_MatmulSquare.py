"""The elementwise square of a matrix product."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """out = (A @ B) ** 2."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        C = torch.matmul(A, B)
        return C * C


M = 128
K = 96
N = 160


def get_inputs():
    A = torch.randn(M, K)
    B = torch.randn(K, N)
    return [A, B]


def get_init_inputs():
    return []
