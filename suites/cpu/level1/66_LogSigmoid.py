"""Log-sigmoid: log(1 / (1 + exp(-x))) elementwise."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """F.logsigmoid of every element."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.logsigmoid(x)


batch_size = 128
dim = 16384


def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x]


def get_init_inputs():
    return []
