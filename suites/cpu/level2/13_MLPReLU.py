"""Two-layer perceptron: linear, ReLU, linear."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """fc2(relu(fc1(x)))."""

    def __init__(self, in_features: int, hidden_features: int, out_features: int):
        super().__init__()
        self.fc1 = nn.Linear(in_features, hidden_features)
        self.fc2 = nn.Linear(hidden_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.relu(self.fc1(x)))


batch_size = 128
in_features = 512
hidden_features = 1024
out_features = 256


def get_inputs():
    x = torch.randn(batch_size, in_features)
    return [x]


def get_init_inputs():
    return [in_features, hidden_features, out_features]
