# family: row_reduction
"""Epsilon-insensitive loss: errors within a constructor-given epsilon cost nothing; mean over all elements."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """mean(max(|predictions - targets| - epsilon, 0)) over every element (a 0-d result)."""

    def __init__(self, epsilon: float):
        super().__init__()
        self.epsilon = epsilon

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return torch.mean(torch.clamp(torch.abs(predictions - targets) - self.epsilon, min=0.0))


batch_size = 128
dim = 1024
epsilon = 0.25


def get_inputs():
    predictions = torch.randn(batch_size, dim)
    targets = torch.randn(batch_size, dim)
    return [predictions, targets]


def get_init_inputs():
    return [epsilon]
