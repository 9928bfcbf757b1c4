"""Affine map of every element by two constructor constants: x * scale + shift."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Multiplies by `scale`, then adds `shift` (both plain floats, not parameters)."""

    def __init__(self, scale: float, shift: float):
        super().__init__()
        self.scale = scale
        self.shift = shift

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.scale + self.shift


batch_size = 128
dim = 16384
scale = 1.5
shift = -0.25


def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x]


def get_init_inputs():
    return [scale, shift]
