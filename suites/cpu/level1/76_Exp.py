"""Exponential elementwise."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """exp(x) of every element."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.exp(x)


batch_size = 128
dim = 16384


def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x]


def get_init_inputs():
    return []
