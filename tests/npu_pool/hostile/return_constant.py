# task: level1/4_ReLU.py
# expect-gate: correctness
# hack: returns a constant of the right shape (zeros), ignoring the data
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.zeros_like(x)
