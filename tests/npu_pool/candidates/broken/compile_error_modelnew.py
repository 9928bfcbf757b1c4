# task: level1/4_ReLU.py
# expect-gate: compile
"""A ReLU extension whose C++ does not compile (a missing semicolon and a wrong type)."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_SOURCE = r"""
#include <torch/extension.h>

void relu_broken(torch::Tensor x, torch::Tensor out) {
    const float* src = x.data_ptr<float>()
    float* dst = out.data_ptr<float>();
    for (int64_t i = 0; i < x.numel(); ++i) dst[i] = src[i] > 0.0f ? src : 0.0f;
}
"""

_ext = load_inline(
    name="evk_cand_broken_relu_compile",
    cpp_sources=_SOURCE,
    functions=["relu_broken"],
    extra_cflags=["-O3", "-fopenmp"],
    extra_ldflags=["-fopenmp"],
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        _ext.relu_broken(x.contiguous(), out)
        return out
