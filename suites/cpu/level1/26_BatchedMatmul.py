"""A batch of independent matrix products."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """C[b] = A[b] @ B[b] for every b."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.bmm(A, B)


batch_size = 16
m = 128
k = 96
n = 160


def get_inputs():
    A = torch.randn(batch_size, m, k)
    B = torch.randn(batch_size, k, n)
    return [A, B]


def get_init_inputs():
    return []
