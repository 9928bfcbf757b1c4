"""Parametric ReLU: a leaky ReLU whose one negative slope is a learned parameter."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """x where x >= 0, weight * x elsewhere; `prelu.weight` holds one shared slope."""

    def __init__(self, init: float):
        super().__init__()
        self.prelu = nn.PReLU(num_parameters=1, init=init)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.prelu(x)


batch_size = 128
dim = 16384
init = 0.2  # the slope's starting value: not the default 0.25, so a kernel must read the parameter


def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x]


def get_init_inputs():
    return [init]
