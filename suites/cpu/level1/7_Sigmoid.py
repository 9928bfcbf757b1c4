"""Logistic sigmoid: 1 / (1 + exp(-x))."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Applies the sigmoid elementwise."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(x)


batch_size = 128
dim = 16384


def get_inputs():
    x = torch.randn(batch_size, dim) * 4.0
    return [x]


def get_init_inputs():
    return []
