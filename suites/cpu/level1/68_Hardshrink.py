"""Hard shrinkage: zero inside [-lambd, lambd], the element itself outside."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """x where |x| > lambd, 0 elsewhere."""

    def __init__(self, lambd: float):
        super().__init__()
        self.lambd = lambd

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.hardshrink(x, self.lambd)


batch_size = 128
dim = 16384
lambd = 0.5


def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x]


def get_init_inputs():
    return [lambd]
