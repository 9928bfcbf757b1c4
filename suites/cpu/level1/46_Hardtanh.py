"""Clips every element to [min_val, max_val], both given to the constructor."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """F.hardtanh with constructor bounds."""

    def __init__(self, min_val: float, max_val: float):
        super().__init__()
        self.min_val = min_val
        self.max_val = max_val

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.hardtanh(x, min_val=self.min_val, max_val=self.max_val)


batch_size = 128
dim = 16384
min_val = -0.5
max_val = 0.75


def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x]


def get_init_inputs():
    return [min_val, max_val]
