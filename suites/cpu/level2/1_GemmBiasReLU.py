"""Bias-free linear layer, then a separate bias vector, then ReLU."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """relu(x @ W.T + bias) with W from nn.Linear(bias=False) and bias a parameter of its own."""

    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features, bias=False)
        self.bias = nn.Parameter(0.1 * torch.randn(out_features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.gemm(x) + self.bias)


batch_size = 256
in_features = 1024
out_features = 512


def get_inputs():
    x = torch.randn(batch_size, in_features)
    return [x]


def get_init_inputs():
    return [in_features, out_features]
