"""Rectified linear unit: max(x, 0) elementwise."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Applies ReLU to a tensor of any shape."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


batch_size = 128
dim = 16384


def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x]


def get_init_inputs():
    return []
