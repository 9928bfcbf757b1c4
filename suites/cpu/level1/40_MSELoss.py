"""Mean squared error between predictions and targets (a 0-d result)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """mean((predictions - targets)^2) over all elements."""

    def __init__(self):
        super().__init__()

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return torch.mean((predictions - targets) ** 2)


batch_size = 128
dim = 8192


def get_inputs():
    predictions = torch.randn(batch_size, dim)
    targets = torch.randn(batch_size, dim)
    return [predictions, targets]


def get_init_inputs():
    return []
