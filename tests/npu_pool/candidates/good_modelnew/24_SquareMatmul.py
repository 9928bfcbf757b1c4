# task: level1/24_SquareMatmul.py
# expect-gate: ok
"""Matrix product as a C++ extension, i-k-j loop order with OpenMP over rows."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_SOURCE = r"""
#include <torch/extension.h>

void matmul_ikj(torch::Tensor A, torch::Tensor B, torch::Tensor out) {
    const int64_t M = A.size(0), K = A.size(1), N = B.size(1);
    const float* a = A.data_ptr<float>();
    const float* b = B.data_ptr<float>();
    float* c = out.data_ptr<float>();
#pragma omp parallel for
    for (int64_t i = 0; i < M; ++i) {
        float* crow = c + i * N;
        for (int64_t j = 0; j < N; ++j) crow[j] = 0.0f;
        for (int64_t k = 0; k < K; ++k) {
            const float av = a[i * K + k];
            const float* brow = b + k * N;
            for (int64_t j = 0; j < N; ++j) crow[j] += av * brow[j];
        }
    }
}
"""

_ext = load_inline(
    name="evk_cand_matmul_ikj",
    cpp_sources=_SOURCE,
    functions=["matmul_ikj"],
    extra_cflags=["-O3", "-fopenmp"],
    extra_ldflags=["-fopenmp"],
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        A = A.contiguous()
        B = B.contiguous()
        out = torch.empty((A.shape[0], B.shape[1]), dtype=A.dtype)
        _ext.matmul_ikj(A, B, out)
        return out
