# task: level1/20_LayerNorm.py
# expect-gate: ok
"""LayerNorm over the last axis as a C++ extension; statistics accumulated in double."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_SOURCE = r"""
#include <torch/extension.h>
#include <cmath>

void layer_norm(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, torch::Tensor out,
                double eps) {
    const int64_t n = weight.numel();
    const int64_t rows = x.numel() / n;
    const float* src = x.data_ptr<float>();
    const float* w = weight.data_ptr<float>();
    const float* b = bias.data_ptr<float>();
    float* dst = out.data_ptr<float>();
#pragma omp parallel for
    for (int64_t r = 0; r < rows; ++r) {
        const float* s = src + r * n;
        float* d = dst + r * n;
        double sum = 0.0, sum_sq = 0.0;
        for (int64_t j = 0; j < n; ++j) {
            sum += s[j];
            sum_sq += static_cast<double>(s[j]) * s[j];
        }
        const double mean = sum / n;
        const float inv_std = static_cast<float>(1.0 / std::sqrt(sum_sq / n - mean * mean + eps));
        const float m = static_cast<float>(mean);
        for (int64_t j = 0; j < n; ++j) d[j] = (s[j] - m) * inv_std * w[j] + b[j];
    }
}
"""

_ext = load_inline(
    name="evk_cand_layer_norm",
    cpp_sources=_SOURCE,
    functions=["layer_norm"],
    extra_cflags=["-O3", "-fopenmp"],
    extra_ldflags=["-fopenmp"],
)


class ModelNew(nn.Module):
    def __init__(self, normalized_shape: int, eps: float):
        super().__init__()
        self.eps = eps
        # Same names and shapes as the reference's nn.LayerNorm (norm.weight, norm.bias).
        self.norm = nn.Module()
        self.norm.weight = nn.Parameter(torch.ones(normalized_shape))
        self.norm.bias = nn.Parameter(torch.zeros(normalized_shape))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        _ext.layer_norm(
            x, self.norm.weight.contiguous(), self.norm.bias.contiguous(), out, self.eps
        )
        return out
