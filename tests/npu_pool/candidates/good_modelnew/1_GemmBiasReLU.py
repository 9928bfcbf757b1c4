# task: level2/1_GemmBiasReLU.py
# expect-gate: ok
"""Fused linear + bias + ReLU as a C++ extension: one dot product per output element."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_SOURCE = r"""
#include <torch/extension.h>

void gemm_bias_relu(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, torch::Tensor out) {
    const int64_t B = x.size(0), K = x.size(1), O = weight.size(0);
    const float* xs = x.data_ptr<float>();
    const float* ws = weight.data_ptr<float>();
    const float* bs = bias.data_ptr<float>();
    float* os = out.data_ptr<float>();
#pragma omp parallel for collapse(2)
    for (int64_t b = 0; b < B; ++b) {
        for (int64_t o = 0; o < O; ++o) {
            const float* xr = xs + b * K;
            const float* wr = ws + o * K;
            float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
            for (int64_t k = 0; k < K; ++k) acc += xr[k] * wr[k];
            acc += bs[o];
            os[b * O + o] = acc > 0.0f ? acc : 0.0f;
        }
    }
}
"""

_ext = load_inline(
    name="evk_cand_gemm_bias_relu",
    cpp_sources=_SOURCE,
    functions=["gemm_bias_relu"],
    extra_cflags=["-O3", "-fopenmp"],
    extra_ldflags=["-fopenmp"],
)


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        # Same names and shapes as the reference: gemm.weight (no gemm bias) and bias.
        self.gemm = nn.Module()
        self.gemm.weight = nn.Parameter(torch.zeros(out_features, in_features))
        self.bias = nn.Parameter(torch.zeros(out_features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty((x.shape[0], self.gemm.weight.shape[0]), dtype=x.dtype)
        _ext.gemm_bias_relu(x, self.gemm.weight.contiguous(), self.bias.contiguous(), out)
        return out
