# task: level1/37_Cumsum.py
# expect-gate: ok
"""Prefix sum along the last axis of a 2-d tensor as a C++ extension (double running sum)."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_SOURCE = r"""
#include <torch/extension.h>

void cumsum_2d(torch::Tensor x, torch::Tensor out, int64_t dim) {
    const int64_t rows = x.size(0), cols = x.size(1);
    const int64_t axis = dim < 0 ? dim + 2 : dim;
    const int64_t lines = axis == 1 ? rows : cols;
    const int64_t len = axis == 1 ? cols : rows;
    const int64_t step = axis == 1 ? 1 : cols;
    const int64_t gap = axis == 1 ? cols : 1;
    const float* src = x.data_ptr<float>();
    float* dst = out.data_ptr<float>();
#pragma omp parallel for
    for (int64_t l = 0; l < lines; ++l) {
        double acc = 0.0;
        for (int64_t i = 0; i < len; ++i) {
            const int64_t at = l * gap + i * step;
            acc += src[at];
            dst[at] = static_cast<float>(acc);
        }
    }
}
"""

_ext = load_inline(
    name="evk_cand_cumsum_2d",
    cpp_sources=_SOURCE,
    functions=["cumsum_2d"],
    extra_cflags=["-O3", "-fopenmp"],
    extra_ldflags=["-fopenmp"],
)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        _ext.cumsum_2d(x, out, self.dim)
        return out
