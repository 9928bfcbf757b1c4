"""exp(x) - 1, elementwise."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """out = expm1(x)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.expm1(x)


rows = 64
cols = 4096


def get_inputs():
    x = torch.randn(rows, cols)
    return [x]


def get_init_inputs():
    return []
