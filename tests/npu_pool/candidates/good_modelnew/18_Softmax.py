# task: level1/18_Softmax.py
# expect-gate: ok
"""Row softmax as a C++ extension: max, exponentials with a double sum, then one scale."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_SOURCE = r"""
#include <torch/extension.h>
#include <cmath>

void row_softmax(torch::Tensor x, torch::Tensor out) {
    const int64_t rows = x.size(0), cols = x.size(1);
    const float* src = x.data_ptr<float>();
    float* dst = out.data_ptr<float>();
#pragma omp parallel for
    for (int64_t r = 0; r < rows; ++r) {
        const float* s = src + r * cols;
        float* d = dst + r * cols;
        float peak = s[0];
        for (int64_t j = 1; j < cols; ++j) peak = s[j] > peak ? s[j] : peak;
        double total = 0.0;
        for (int64_t j = 0; j < cols; ++j) {
            d[j] = std::exp(s[j] - peak);
            total += d[j];
        }
        const float scale = static_cast<float>(1.0 / total);
        for (int64_t j = 0; j < cols; ++j) d[j] *= scale;
    }
}
"""

_ext = load_inline(
    name="evk_cand_row_softmax",
    cpp_sources=_SOURCE,
    functions=["row_softmax"],
    extra_cflags=["-O3", "-fopenmp"],
    extra_ldflags=["-fopenmp"],
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        _ext.row_softmax(x, out)
        return out
