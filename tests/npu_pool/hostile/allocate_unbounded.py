# task: level1/4_ReLU.py
# expect-gate: runtime
# hack: allocates far more memory than any device has (64 TiB); the sandbox must turn the
# failure into a verdict, not a dead worker
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        hoard = torch.empty(1 << 44, dtype=x.dtype)
        return hoard[: x.numel()].view(x.shape)
