"""Layer normalisation over the last axis with a learned scale and shift."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """nn.LayerNorm over `normalized_shape` features; its affine weights start away from 1 and 0."""

    def __init__(self, normalized_shape: int, eps: float):
        super().__init__()
        self.norm = nn.LayerNorm(normalized_shape, eps=eps)
        # Non-trivial affine parameters, so a kernel that ignores them is caught.
        with torch.no_grad():
            self.norm.weight.copy_(1.0 + 0.2 * torch.randn(normalized_shape))
            self.norm.bias.copy_(0.1 * torch.randn(normalized_shape))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x)


batch_size = 256
features = 4096
eps = 1e-5


def get_inputs():
    x = torch.randn(batch_size, features) * 2.0 + 0.5
    return [x]


def get_init_inputs():
    return [features, eps]
