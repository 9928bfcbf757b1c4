"""Linear layer, multiplication by a constant, then clipping to [min_val, max_val]."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """hardtanh(linear(x) * scaling_factor, min_val, max_val)."""

    def __init__(
        self,
        in_features: int,
        out_features: int,
        scaling_factor: float,
        min_val: float,
        max_val: float,
    ):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scaling_factor = scaling_factor
        self.min_val = min_val
        self.max_val = max_val

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.hardtanh(self.linear(x) * self.scaling_factor, self.min_val, self.max_val)


batch_size = 256
in_features = 512
out_features = 512
scaling_factor = 2.0
min_val = -0.5
max_val = 0.75


def get_inputs():
    x = torch.randn(batch_size, in_features)
    return [x]


def get_init_inputs():
    return [in_features, out_features, scaling_factor, min_val, max_val]
