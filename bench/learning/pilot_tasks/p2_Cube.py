"""x cubed, elementwise."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """out = x * x * x."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * x * x


rows = 128
cols = 2048


def get_inputs():
    x = torch.randn(rows, cols)
    return [x]


def get_init_inputs():
    return []
