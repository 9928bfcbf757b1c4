"""Outer product of a column vector and a row vector."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """C = u @ v with u of shape (M, 1) and v of shape (1, N)."""

    def __init__(self):
        super().__init__()

    def forward(self, u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return torch.matmul(u, v)


M = 1024
N = 2048


def get_inputs():
    u = torch.randn(M, 1)
    v = torch.randn(1, N)
    return [u, v]


def get_init_inputs():
    return []
