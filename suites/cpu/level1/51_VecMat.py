"""Row vector times a matrix."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """y = v @ A with v of shape (1, K) and A of shape (K, N)."""

    def __init__(self):
        super().__init__()

    def forward(self, v: torch.Tensor, A: torch.Tensor) -> torch.Tensor:
        return torch.matmul(v, A)


K = 2048
N = 2048


def get_inputs():
    v = torch.randn(1, K)
    A = torch.randn(K, N)
    return [v, A]


def get_init_inputs():
    return []
