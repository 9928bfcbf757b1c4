# family: softmax_norm
"""Batch normalisation of NCHW activations in inference mode (running statistics), then tanh."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """tanh((x - running_mean) / sqrt(running_var + eps) * weight + bias), per channel."""

    def __init__(self, num_features: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(1.0 + 0.2 * torch.randn(num_features))
        self.bias = nn.Parameter(0.1 * torch.randn(num_features))
        # Statistics as a trained network would hold them, not the 0/1 defaults.
        self.register_buffer("running_mean", 0.5 * torch.randn(num_features))
        self.register_buffer("running_var", 0.5 + torch.rand(num_features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.batch_norm(x, self.running_mean, self.running_var, self.weight, self.bias, training=False, eps=self.eps)
        return torch.tanh(y)


batch_size = 8
channels = 24
height = 32
width = 32
eps = 1e-5


def get_inputs():
    x = torch.randn(batch_size, channels, height, width)
    return [x]


def get_init_inputs():
    return [channels, eps]
