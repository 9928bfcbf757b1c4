"""Threshold: keeps elements above a threshold, replaces the others with a constant."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """x where x > threshold, value elsewhere (both given to the constructor)."""

    def __init__(self, threshold: float, value: float):
        super().__init__()
        self.threshold = threshold
        self.value = value

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.threshold(x, self.threshold, self.value)


batch_size = 128
dim = 16384
threshold = 0.25
value = -0.5


def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x]


def get_init_inputs():
    return [threshold, value]
