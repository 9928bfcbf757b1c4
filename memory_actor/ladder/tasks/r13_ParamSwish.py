# family: elementwise
"""Swish with a learned sharpness: x * sigmoid(beta * x), beta one shared parameter."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """x * sigmoid(beta * x); `beta` holds one value, started at the constructor's `init`."""

    def __init__(self, init: float):
        super().__init__()
        self.beta = nn.Parameter(torch.full((1,), init))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.sigmoid(self.beta * x)


rows = 64
cols = 1024
init = 1.7  # not 1: a kernel must read the parameter


def get_inputs():
    x = torch.randn(rows, cols) * 3.0
    return [x]


def get_init_inputs():
    return [init]
