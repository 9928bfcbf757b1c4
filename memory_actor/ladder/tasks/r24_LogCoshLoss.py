# family: row_reduction
"""Log-cosh loss between predictions and targets, averaged over all elements (a 0-d result)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """mean(log(cosh(predictions - targets))) over every element."""

    def __init__(self):
        super().__init__()

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return torch.mean(torch.log(torch.cosh(predictions - targets)))


batch_size = 128
dim = 1024


def get_inputs():
    predictions = torch.randn(batch_size, dim)
    targets = torch.randn(batch_size, dim)
    return [predictions, targets]


def get_init_inputs():
    return []
