# task: level1/9_LeakyReLU.py
# expect-gate: ok
"""LeakyReLU as a C++ extension: one OpenMP loop over the flattened tensor."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_SOURCE = r"""
#include <torch/extension.h>

void leaky_relu(torch::Tensor x, torch::Tensor out, double negative_slope) {
    const float* src = x.data_ptr<float>();
    float* dst = out.data_ptr<float>();
    const int64_t n = x.numel();
    const float slope = static_cast<float>(negative_slope);
#pragma omp parallel for simd
    for (int64_t i = 0; i < n; ++i) {
        const float v = src[i];
        dst[i] = v >= 0.0f ? v : v * slope;
    }
}
"""

_ext = load_inline(
    name="evk_cand_leaky_relu",
    cpp_sources=_SOURCE,
    functions=["leaky_relu"],
    extra_cflags=["-O3", "-fopenmp"],
    extra_ldflags=["-fopenmp"],
)


class ModelNew(nn.Module):
    def __init__(self, negative_slope: float):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        _ext.leaky_relu(x, out, self.negative_slope)
        return out
