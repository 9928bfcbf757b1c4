"""EvoKernel's best (and first feasible) kernel for 27_MatVec, as a KernelBench ModelNew (attempt 03d902688c4c45bd9768e0079c67a49a, iteration 1).

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
K = 2048

KERNEL_SOURCE = r'''#include <cmath>

extern "C" void kernel(const float* A, const float* v, float* out, int64_t A_d0, int64_t A_d1, int64_t v_d0, int64_t v_d1, int64_t out_d0, int64_t out_d1) {
    const int64_t M = A_d0, K = A_d1, N = v_d1;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < M; ++i) {
        float* c = out + i * N;
        for (int64_t j = 0; j < N; ++j) c[j] = 0.0f;  // outputs arrive as NaN
        for (int64_t k = 0; k < K; ++k) {
            const float a = A[i * K + k];
            const float* b = v + k * N;
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
extern "C" void kernel(const float* A, const float* v, float* out, int64_t A_d0, int64_t A_d1, int64_t v_d0, int64_t v_d1, int64_t out_d0, int64_t out_d1);
"""

_LAUNCHER = """
void evokernel_launch(torch::Tensor A, torch::Tensor v, torch::Tensor out, int64_t A_d0, int64_t A_d1, int64_t v_d0, int64_t v_d1, int64_t out_d0, int64_t out_d1) {
    kernel(static_cast<const float*>(A.data_ptr()), static_cast<const float*>(v.data_ptr()), static_cast<float*>(out.data_ptr()), A_d0, A_d1, v_d0, v_d1, out_d0, out_d1);
}
"""

_extension = load_inline(
    name='evokernel_27_MatVec_55b3b8cce7',
    cpp_sources=[_PRELUDE + '#line 1 "kernel.cpp"\n' + KERNEL_SOURCE + "\n" + _LAUNCHER],
    functions=["evokernel_launch"],
    extra_cflags=['-O3', '-march=native', '-fopenmp', '-std=c++17'],
    extra_ldflags=["-fopenmp"],
)


class ModelNew(nn.Module):
    """y = A @ v with A of shape (M, K) and v of shape (K, 1)."""

    def __init__(self):
        super().__init__()
        self.evokernel_init = {}

    def forward(self, A, v):
        A = A.detach().contiguous()
        v = v.detach().contiguous()
        out = torch.empty((A.shape[0], v.shape[1]), dtype=torch.float32, device=A.device)
        _extension.evokernel_launch(A, v, out, A.shape[0], A.shape[1], v.shape[0], v.shape[1], out.shape[0], out.shape[1])
        return out
