"""Continuously differentiable ELU with a constructor-given alpha."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""

    def __init__(self, alpha: float):
        super().__init__()
        self.alpha = alpha

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.celu(x, alpha=self.alpha)


batch_size = 128
dim = 16384
alpha = 1.5


def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x]


def get_init_inputs():
    return [alpha]
