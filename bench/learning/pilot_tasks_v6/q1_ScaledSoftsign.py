"""x * scale / (1 + |x|), elementwise; the scale is a constructor argument."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """out = scale * x / (1 + |x|)."""

    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.scale * x / (1.0 + torch.abs(x))


rows = 64
cols = 4096
scale = 1.5


def get_inputs():
    x = torch.randn(rows, cols)
    return [x]


def get_init_inputs():
    return [scale]
