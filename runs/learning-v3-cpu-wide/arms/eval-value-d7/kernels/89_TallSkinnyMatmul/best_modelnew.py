"""EvoKernel's best (and first feasible) kernel for 89_TallSkinnyMatmul, as a KernelBench ModelNew (attempt db8544f4c0574d3a97ca522d29cc1930, iteration 1).

Standalone: needs torch and a C++ compiler with OpenMP, nothing of EvoKernel. The kernel
below (KERNEL_SOURCE, exactly as EvoKernel verified it) is built with load_inline and called
through `evokernel_launch` with the entry point's arguments: data pointers, scalars, then
every dimension of every tensor. ModelNew is the task's reference Model with its forward
replaced: the same constructor, so the same parameters from the same seed.
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

M = 2048
K = 32
N = 256

KERNEL_SOURCE = r'''#include <cstdint>

extern "C" void kernel(const float* A, const float* B, float* out,
                       int64_t A_d0, int64_t A_d1, int64_t B_d0, int64_t B_d1,
                       int64_t out_d0, int64_t out_d1) {
    const int64_t M = A_d0, K = A_d1, N = B_d1;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < M; ++i) {
        float* c = out + i * N;
        for (int64_t j = 0; j < N; ++j) c[j] = 0.0f;  // outputs arrive as NaN
        for (int64_t k = 0; k < K; ++k) {
            const float a = A[i * K + k];
            const float* b = B + k * N;
#pragma omp simd
            for (int64_t j = 0; j < N; ++j) c[j] += a * b[j];
        }
    }
}
'''

_PRELUDE = """#include <torch/extension.h>
#include <cstdint>
#include <cstddef>
#include <cmath>
#include <cstring>
#include <algorithm>
#include <numeric>
#include <limits>
#include <omp.h>
extern "C" void kernel(const float* A, const float* B, float* out, int64_t A_d0, int64_t A_d1, int64_t B_d0, int64_t B_d1, int64_t out_d0, int64_t out_d1);
"""

_LAUNCHER = """
void evokernel_launch(torch::Tensor A, torch::Tensor B, torch::Tensor out, int64_t A_d0, int64_t A_d1, int64_t B_d0, int64_t B_d1, int64_t out_d0, int64_t out_d1) {
    kernel(static_cast<const float*>(A.data_ptr()), static_cast<const float*>(B.data_ptr()), static_cast<float*>(out.data_ptr()), A_d0, A_d1, B_d0, B_d1, out_d0, out_d1);
}
"""

_extension = load_inline(
    name='evokernel_89_TallSkinnyMatmul_dac8858a88',
    cpp_sources=[_PRELUDE + '#line 1 "kernel.cpp"\n' + KERNEL_SOURCE + "\n" + _LAUNCHER],
    functions=["evokernel_launch"],
    extra_cflags=['-O3', '-march=native', '-fopenmp', '-std=c++17'],
    extra_ldflags=["-fopenmp"],
)


class ModelNew(nn.Module):
    """C = A @ B with A of shape (M, K), B of shape (K, N) and K small."""

    def __init__(self):
        super().__init__()
        self.evokernel_init = {}

    def forward(self, A, B):
        A = A.detach().contiguous()
        B = B.detach().contiguous()
        out = torch.empty((A.shape[0], B.shape[1]), dtype=torch.float32, device=A.device)
        _extension.evokernel_launch(A, B, out, A.shape[0], A.shape[1], B.shape[0], B.shape[1], out.shape[0], out.shape[1])
        return out
