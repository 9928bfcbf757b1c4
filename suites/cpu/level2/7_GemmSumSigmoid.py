"""Linear layer, sum over its output features, then a sigmoid: one score per row."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """sigmoid(sum(linear(x), dim=1, keepdim=True)), shape (batch_size, 1)."""

    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(torch.sum(self.linear(x), dim=1, keepdim=True))


batch_size = 256
in_features = 1024
out_features = 512


def get_inputs():
    # Small inputs keep the summed scores near zero, where the sigmoid is not flat.
    x = 0.1 * torch.randn(batch_size, in_features)
    return [x]


def get_init_inputs():
    return [in_features, out_features]
