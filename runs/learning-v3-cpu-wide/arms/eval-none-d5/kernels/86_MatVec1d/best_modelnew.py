"""EvoKernel's best (and first feasible) kernel for 86_MatVec1d, as a KernelBench ModelNew (attempt 39a39236d2b94994af6886de2b5d7c63, iteration 1).

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

extern "C" void kernel(const float* A, const float* v, float* out, int64_t A_d0, int64_t A_d1, int64_t v_d0, int64_t out_d0) {
    const int64_t n = out_d0;
    #pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) {
        float sum = 0.0f;
        for (int64_t k = 0; k < A_d1; ++k) {
            sum += A[i * A_d1 + k] * v[k];
        }
        out[i] = sum;
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
extern "C" void kernel(const float* A, const float* v, float* out, int64_t A_d0, int64_t A_d1, int64_t v_d0, int64_t out_d0);
"""

_LAUNCHER = """
void evokernel_launch(torch::Tensor A, torch::Tensor v, torch::Tensor out, int64_t A_d0, int64_t A_d1, int64_t v_d0, int64_t out_d0) {
    kernel(static_cast<const float*>(A.data_ptr()), static_cast<const float*>(v.data_ptr()), static_cast<float*>(out.data_ptr()), A_d0, A_d1, v_d0, out_d0);
}
"""

_extension = load_inline(
    name='evokernel_86_MatVec1d_079bf8f428',
    cpp_sources=[_PRELUDE + '#line 1 "kernel.cpp"\n' + KERNEL_SOURCE + "\n" + _LAUNCHER],
    functions=["evokernel_launch"],
    extra_cflags=['-O3', '-march=native', '-fopenmp', '-std=c++17'],
    extra_ldflags=["-fopenmp"],
)


class ModelNew(nn.Module):
    """y = A @ v with A of shape (M, K) and v of shape (K,); y has shape (M,)."""

    def __init__(self):
        super().__init__()
        self.evokernel_init = {}

    def forward(self, A, v):
        A = A.detach().contiguous()
        v = v.detach().contiguous()
        out = torch.empty((A.shape[0],), dtype=torch.float32, device=A.device)
        _extension.evokernel_launch(A, v, out, A.shape[0], A.shape[1], v.shape[0], out.shape[0])
        return out
