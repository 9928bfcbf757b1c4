"""Linear layer, exact GELU, then multiplication by a constant factor."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """gelu(linear(x)) * scale_factor."""

    def __init__(self, in_features: int, out_features: int, scale_factor: float):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scale_factor = scale_factor

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(self.linear(x)) * self.scale_factor


batch_size = 256
in_features = 512
out_features = 512
scale_factor = 2.0


def get_inputs():
    x = torch.randn(batch_size, in_features)
    return [x]


def get_init_inputs():
    return [in_features, out_features, scale_factor]
