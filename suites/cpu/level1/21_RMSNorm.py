"""Root-mean-square normalisation over the last axis with a learned gain."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """x / sqrt(mean(x^2) + eps) * weight, along the last axis."""

    def __init__(self, features: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(1.0 + 0.2 * torch.randn(features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        inv_rms = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return x * inv_rms * self.weight


batch_size = 256
features = 4096
eps = 1e-6


def get_inputs():
    x = torch.randn(batch_size, features)
    return [x]


def get_init_inputs():
    return [features, eps]
