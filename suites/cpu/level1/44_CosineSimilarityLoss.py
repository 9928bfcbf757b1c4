"""One minus the cosine similarity of paired rows, averaged over the batch."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """mean(1 - cos(a_i, b_i)) with the cosine taken along axis 1."""

    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.mean(1.0 - F.cosine_similarity(a, b, dim=1))


batch_size = 128
dim = 8192  # a size: the length of each row


def get_inputs():
    a = torch.randn(batch_size, dim)
    b = torch.randn(batch_size, dim)
    return [a, b]


def get_init_inputs():
    return []
