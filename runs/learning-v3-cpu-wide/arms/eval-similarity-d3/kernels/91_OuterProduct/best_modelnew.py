"""EvoKernel's best (and first feasible) kernel for 91_OuterProduct, as a KernelBench ModelNew (attempt 4d5dab5cb0304c2db370483c4ab00d55, iteration 1).

Standalone: needs torch and a C++ compiler with OpenMP, nothing of EvoKernel. The kernel
below (KERNEL_SOURCE, exactly as EvoKernel verified it) is built with load_inline and called
through `evokernel_launch` with the entry point's arguments: data pointers, scalars, then
every dimension of every tensor. ModelNew is the task's reference Model with its forward
replaced: the same constructor, so the same parameters from the same seed.
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

M = 1024
N = 2048

KERNEL_SOURCE = r'''#include <cmath>
#include <cstdint>

extern "C" void kernel(const float* u, const float* v, float* out,
                       int64_t u_d0, int64_t u_d1, int64_t v_d0, int64_t v_d1,
                       int64_t out_d0, int64_t out_d1) {
    const int64_t M = u_d0;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < M; ++i) {
        float* c = out + i * v_d1;
        for (int64_t j = 0; j < v_d1; ++j) c[j] = 0.0f;  // outputs arrive as NaN
        const float u_i = u[i];  // keep the hot row
#pragma omp simd
        for (int64_t k = 0; k < v_d1; ++k) c[k] += u_i * v[0 * v_d1 + k];
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
extern "C" void kernel(const float* u, const float* v, float* out, int64_t u_d0, int64_t u_d1, int64_t v_d0, int64_t v_d1, int64_t out_d0, int64_t out_d1);
"""

_LAUNCHER = """
void evokernel_launch(torch::Tensor u, torch::Tensor v, torch::Tensor out, int64_t u_d0, int64_t u_d1, int64_t v_d0, int64_t v_d1, int64_t out_d0, int64_t out_d1) {
    kernel(static_cast<const float*>(u.data_ptr()), static_cast<const float*>(v.data_ptr()), static_cast<float*>(out.data_ptr()), u_d0, u_d1, v_d0, v_d1, out_d0, out_d1);
}
"""

_extension = load_inline(
    name='evokernel_91_OuterProduct_20a9dd9aaa',
    cpp_sources=[_PRELUDE + '#line 1 "kernel.cpp"\n' + KERNEL_SOURCE + "\n" + _LAUNCHER],
    functions=["evokernel_launch"],
    extra_cflags=['-O3', '-march=native', '-fopenmp', '-std=c++17'],
    extra_ldflags=["-fopenmp"],
)


class ModelNew(nn.Module):
    """C = u @ v with u of shape (M, 1) and v of shape (1, N)."""

    def __init__(self):
        super().__init__()
        self.evokernel_init = {}

    def forward(self, u, v):
        u = u.detach().contiguous()
        v = v.detach().contiguous()
        out = torch.empty((u.shape[0], v.shape[1]), dtype=torch.float32, device=u.device)
        _extension.evokernel_launch(u, v, out, u.shape[0], u.shape[1], v.shape[0], v.shape[1], out.shape[0], out.shape[1])
        return out
