# task: level1/14_SumOverDim.py
# expect-gate: correctness
"""Right sums, wrong shape: the reduced axis is dropped although the reference keeps it."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_SOURCE = r"""
#include <torch/extension.h>

void sum_axis1(torch::Tensor x, torch::Tensor out) {
    const int64_t B = x.size(0), R = x.size(1), I = x.size(2);
    const float* src = x.data_ptr<float>();
    float* dst = out.data_ptr<float>();
#pragma omp parallel for
    for (int64_t b = 0; b < B; ++b) {
        for (int64_t i = 0; i < I; ++i) dst[b * I + i] = 0.0f;
        for (int64_t r = 0; r < R; ++r)
            for (int64_t i = 0; i < I; ++i) dst[b * I + i] += src[(b * R + r) * I + i];
    }
}
"""

_ext = load_inline(
    name="evk_cand_broken_sum_shape",
    cpp_sources=_SOURCE,
    functions=["sum_axis1"],
    extra_cflags=["-O3", "-fopenmp"],
    extra_ldflags=["-fopenmp"],
)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty((x.shape[0], x.shape[2]), dtype=x.dtype)  # keepdim forgotten
        _ext.sum_axis1(x, out)
        return out
