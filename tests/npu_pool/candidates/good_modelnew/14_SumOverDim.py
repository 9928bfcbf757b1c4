# task: level1/14_SumOverDim.py
# expect-gate: ok
"""Sum over one axis, keepdim, as a C++ extension over an [outer, reduced, inner] view."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_SOURCE = r"""
#include <torch/extension.h>

void sum_over_dim(torch::Tensor x, torch::Tensor out, int64_t dim) {
    const int64_t rank = x.dim();
    const int64_t axis = dim < 0 ? dim + rank : dim;
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= x.size(d);
    for (int64_t d = axis + 1; d < rank; ++d) inner *= x.size(d);
    const int64_t reduced = x.size(axis);
    const float* src = x.data_ptr<float>();
    float* dst = out.data_ptr<float>();
#pragma omp parallel for
    for (int64_t o = 0; o < outer; ++o) {
        float* row = dst + o * inner;
        for (int64_t i = 0; i < inner; ++i) row[i] = 0.0f;
        for (int64_t r = 0; r < reduced; ++r) {
            const float* s = src + (o * reduced + r) * inner;
            for (int64_t i = 0; i < inner; ++i) row[i] += s[i];
        }
    }
}
"""

_ext = load_inline(
    name="evk_cand_sum_over_dim",
    cpp_sources=_SOURCE,
    functions=["sum_over_dim"],
    extra_cflags=["-O3", "-fopenmp"],
    extra_ldflags=["-fopenmp"],
)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        shape = list(x.shape)
        shape[self.dim] = 1
        out = torch.empty(shape, dtype=x.dtype)
        _ext.sum_over_dim(x, out, self.dim)
        return out
