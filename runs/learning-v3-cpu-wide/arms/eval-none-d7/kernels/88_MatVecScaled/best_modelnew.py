"""EvoKernel's best (and first feasible) kernel for 88_MatVecScaled, as a KernelBench ModelNew (attempt a9c7d287d96241ac98cf5da3eedc14c3, iteration 1).

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
alpha = 0.5

KERNEL_SOURCE = r'''#include <cmath>

extern "C" void kernel(const float* A, const float* v, float* out, double alpha, int64_t A_d0, int64_t A_d1, int64_t v_d0, int64_t v_d1, int64_t out_d0, int64_t out_d1) {
    const int64_t n = out_d0 * out_d1;
    const float a = static_cast<float>(alpha);
    #pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) {
        float sum = 0.0f;
        for (int64_t j = 0; j < A_d1; ++j) {
            sum += A[i * A_d1 + j] * v[j];
        }
        out[i] = a * sum;
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
extern "C" void kernel(const float* A, const float* v, float* out, double alpha, int64_t A_d0, int64_t A_d1, int64_t v_d0, int64_t v_d1, int64_t out_d0, int64_t out_d1);
"""

_LAUNCHER = """
void evokernel_launch(torch::Tensor A, torch::Tensor v, torch::Tensor out, double alpha, int64_t A_d0, int64_t A_d1, int64_t v_d0, int64_t v_d1, int64_t out_d0, int64_t out_d1) {
    kernel(static_cast<const float*>(A.data_ptr()), static_cast<const float*>(v.data_ptr()), static_cast<float*>(out.data_ptr()), alpha, A_d0, A_d1, v_d0, v_d1, out_d0, out_d1);
}
"""

_extension = load_inline(
    name='evokernel_88_MatVecScaled_4f44ed8e8c',
    cpp_sources=[_PRELUDE + '#line 1 "kernel.cpp"\n' + KERNEL_SOURCE + "\n" + _LAUNCHER],
    functions=["evokernel_launch"],
    extra_cflags=['-O3', '-march=native', '-fopenmp', '-std=c++17'],
    extra_ldflags=["-fopenmp"],
)


class ModelNew(nn.Module):
    """y = alpha * (A @ v) with A (M, K), v (K, 1)."""

    def __init__(self, alpha: float):
        super().__init__()
        self.alpha = alpha
        self.evokernel_init = {'alpha': alpha}

    def forward(self, A, v):
        A = A.detach().contiguous()
        v = v.detach().contiguous()
        out = torch.empty((A.shape[0], v.shape[1]), dtype=torch.float32, device=A.device)
        _extension.evokernel_launch(A, v, out, float(self.evokernel_init['alpha']), A.shape[0], A.shape[1], v.shape[0], v.shape[1], out.shape[0], out.shape[1])
        return out
