# family: softmax_norm
"""Root-mean-square normalisation over the last axis with a learned gain and a learned shift."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """x / sqrt(mean(x^2) + eps) * weight + bias, along the last axis (no mean is subtracted)."""

    def __init__(self, features: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(1.0 + 0.2 * torch.randn(features))
        self.bias = nn.Parameter(0.1 * torch.randn(features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        inv_rms = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return x * inv_rms * self.weight + self.bias


batch_size = 128
features = 768
eps = 1e-5


def get_inputs():
    x = torch.randn(batch_size, features) * 2.0 + 0.5
    return [x]


def get_init_inputs():
    return [features, eps]
