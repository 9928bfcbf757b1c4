"""Square linear layer, layer normalisation, then a residual connection to the input."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """layer_norm(linear(x)) + x, all with `features` columns."""

    def __init__(self, features: int, eps: float):
        super().__init__()
        self.linear = nn.Linear(features, features)
        self.norm = nn.LayerNorm(features, eps=eps)
        with torch.no_grad():
            self.norm.weight.copy_(1.0 + 0.2 * torch.randn(features))
            self.norm.bias.copy_(0.1 * torch.randn(features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(self.linear(x)) + x


batch_size = 256
features = 512
eps = 1e-5


def get_inputs():
    x = torch.randn(batch_size, features)
    return [x]


def get_init_inputs():
    return [features, eps]
