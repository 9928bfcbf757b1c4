"""Attention for several heads: softmax(Q K^T / sqrt(head_dim)) V, no mask."""

import math

import torch
import torch.nn as nn


class Model(nn.Module):
    """Batched scores, a row softmax, and the weighted sum of values, spelled out step by step."""

    def __init__(self):
        super().__init__()

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
        return torch.matmul(torch.softmax(scores, dim=-1), v)


batch_size = 4
num_heads = 8
seq_len = 128
head_dim = 64


def get_inputs():
    q = torch.randn(batch_size, num_heads, seq_len, head_dim)
    k = torch.randn(batch_size, num_heads, seq_len, head_dim)
    v = torch.randn(batch_size, num_heads, seq_len, head_dim)
    return [q, k, v]


def get_init_inputs():
    return []
