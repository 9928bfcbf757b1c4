"""Linear layer, group normalisation of its features, then ReLU."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """relu(group_norm(linear(x))) with `num_groups` groups over `out_features` channels."""

    def __init__(self, in_features: int, out_features: int, num_groups: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.norm = nn.GroupNorm(num_groups, out_features)
        with torch.no_grad():
            self.norm.weight.copy_(1.0 + 0.2 * torch.randn(out_features))
            self.norm.bias.copy_(0.1 * torch.randn(out_features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.norm(self.linear(x)))


batch_size = 256
in_features = 512
out_features = 512
num_groups = 16


def get_inputs():
    x = torch.randn(batch_size, in_features)
    return [x]


def get_init_inputs():
    return [in_features, out_features, num_groups]
