"""A batch of matrix-vector products."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """y[b] = A[b] @ v[b] with A (B, M, K) and v (B, K, 1)."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return torch.bmm(A, v)


batch_size = 16
M = 512
K = 512


def get_inputs():
    A = torch.randn(batch_size, M, K)
    v = torch.randn(batch_size, K, 1)
    return [A, v]


def get_init_inputs():
    return []
