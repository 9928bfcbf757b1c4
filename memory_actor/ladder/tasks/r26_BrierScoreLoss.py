# family: softmax_norm
"""Brier score of softmax probabilities against per-row probability targets, averaged over the batch."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """mean over rows i of sum over j of (softmax(logits)[i, j] - targets[i, j])^2 (a 0-d result)."""

    def __init__(self):
        super().__init__()

    def forward(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        probabilities = torch.softmax(logits, dim=1)
        return torch.mean(torch.sum((probabilities - targets) ** 2, dim=1))


batch_size = 128
num_classes = 640


def get_inputs():
    logits = torch.randn(batch_size, num_classes) * 2.0
    targets = torch.softmax(torch.randn(batch_size, num_classes), dim=1)
    return [logits, targets]


def get_init_inputs():
    return []
