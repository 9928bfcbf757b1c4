# family: elementwise
"""Keeps the elements inside a band [low, high] given to the constructor; zero outside it."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """x where low <= x <= high, 0 elsewhere (low and high are plain floats, not parameters)."""

    def __init__(self, low: float, high: float):
        super().__init__()
        self.low = low
        self.high = high

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        inside = (x >= self.low) & (x <= self.high)
        return torch.where(inside, x, torch.zeros_like(x))


rows = 64
cols = 1024
low = -0.5
high = 1.25


def get_inputs():
    x = torch.randn(rows, cols)
    return [x]


def get_init_inputs():
    return [low, high]
