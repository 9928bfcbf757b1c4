"""Square root of non-negative inputs."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Elementwise square root."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sqrt(x)


batch_size = 128
dim = 16384


def get_inputs():
    x = torch.rand(batch_size, dim)
    return [x]


def get_init_inputs():
    return []
