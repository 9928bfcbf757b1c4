"""Cross-entropy of logits against per-row probability targets, averaged over the batch."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """mean over rows of -sum_j targets[i, j] * log_softmax(logits)[i, j]."""

    def __init__(self):
        super().__init__()

    def forward(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(logits, targets)


batch_size = 256
num_classes = 1000


def get_inputs():
    logits = torch.randn(batch_size, num_classes) * 2.0
    targets = torch.softmax(torch.randn(batch_size, num_classes), dim=1)
    return [logits, targets]


def get_init_inputs():
    return []
