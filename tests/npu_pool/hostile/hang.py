# task: level1/4_ReLU.py
# expect-gate: runtime
# hack: never returns (the run timeout must stop it)
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        spins = 0
        while True:
            spins += 1
