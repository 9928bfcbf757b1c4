"""Convolution, inference-mode batch normalisation, then ReLU (a folded conv block)."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """relu(batchnorm_eval(conv2d(x))) with 'same' padding and trained-looking statistics."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, eps: float):
        super().__init__()
        self.eps = eps
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)
        self.bn_weight = nn.Parameter(1.0 + 0.2 * torch.randn(out_channels))
        self.bn_bias = nn.Parameter(0.1 * torch.randn(out_channels))
        self.register_buffer("running_mean", 0.2 * torch.randn(out_channels))
        self.register_buffer("running_var", 0.5 + torch.rand(out_channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv(x)
        y = F.batch_norm(
            y,
            self.running_mean,
            self.running_var,
            self.bn_weight,
            self.bn_bias,
            training=False,
            eps=self.eps,
        )
        return torch.relu(y)


batch_size = 8
in_channels = 8
out_channels = 16
height = 64
width = 64
kernel_size = 3
eps = 1e-5


def get_inputs():
    x = torch.randn(batch_size, in_channels, height, width)
    return [x]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, eps]
