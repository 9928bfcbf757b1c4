"""Softplus with a sharpness and a linear-region threshold: log(1 + exp(beta * x)) / beta."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Softplus; where beta * x > threshold it returns x unchanged."""

    def __init__(self, beta: float, threshold: float):
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.softplus(x, beta=self.beta, threshold=self.threshold)


batch_size = 128
dim = 16384
beta = 2.0
threshold = 10.0


def get_inputs():
    x = torch.rand(batch_size, dim) * 8.0
    return [x]


def get_init_inputs():
    return [beta, threshold]
