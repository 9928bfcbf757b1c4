"""Softmax over the feature axis of a 2-d tensor."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Row-wise softmax: exp(x - max) / sum(exp(x - max)) along axis 1."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=1)


batch_size = 128
dim = 8192  # here a size: the length of each row


def get_inputs():
    x = torch.randn(batch_size, dim) * 3.0
    return [x]


def get_init_inputs():
    return []
