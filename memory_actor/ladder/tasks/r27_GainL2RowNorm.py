# family: softmax_norm
"""Each row scaled to unit L2 length (eps under the root), then by a learned per-feature gain."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """x / sqrt(sum(x^2) + eps) * weight, along the last axis."""

    def __init__(self, features: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(1.0 + 0.2 * torch.randn(features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        inv_length = torch.rsqrt(torch.sum(x * x, dim=-1, keepdim=True) + self.eps)
        return x * inv_length * self.weight


batch_size = 128
features = 768
eps = 1e-6


def get_inputs():
    x = torch.randn(batch_size, features)
    return [x]


def get_init_inputs():
    return [features, eps]
