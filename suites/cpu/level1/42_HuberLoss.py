"""Huber loss with a constructor-given delta, averaged over all elements."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """0.5 * d^2 where |d| < delta, delta * (|d| - 0.5 * delta) elsewhere; d = pred - target."""

    def __init__(self, delta: float):
        super().__init__()
        self.delta = delta

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return F.huber_loss(predictions, targets, delta=self.delta)


batch_size = 128
dim = 8192
delta = 0.5


def get_inputs():
    predictions = torch.randn(batch_size, dim)
    targets = torch.randn(batch_size, dim)
    return [predictions, targets]


def get_init_inputs():
    return [delta]
