"""EvoKernel's best (and first feasible) kernel for 83_RowMean, as a KernelBench ModelNew (attempt aff5f001cdd34a098b8bcb39bf44ac05, iteration 1).

Standalone: needs torch and a C++ compiler with OpenMP, nothing of EvoKernel. The kernel
below (KERNEL_SOURCE, exactly as EvoKernel verified it) is built with load_inline and called
through `evokernel_launch` with the entry point's arguments: data pointers, scalars, then
every dimension of every tensor. ModelNew is the task's reference Model with its forward
replaced: the same constructor, so the same parameters from the same seed.
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

rows = 1024
cols = 2048
dim = 1

KERNEL_SOURCE = r'''#include <cmath>

extern "C" void kernel(const float* x, float* out, int64_t dim, int64_t x_d0, int64_t x_d1, int64_t out_d0) {
    const int64_t n = x_d0;
    #pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) {
        float sum = 0.0f;
        for (int64_t j = 0; j < x_d1; ++j) {
            sum += x[i * x_d1 + j];
        }
        out[i] = sum / static_cast<float>(x_d1);
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
extern "C" void kernel(const float* x, float* out, int64_t dim, int64_t x_d0, int64_t x_d1, int64_t out_d0);
"""

_LAUNCHER = """
void evokernel_launch(torch::Tensor x, torch::Tensor out, int64_t dim, int64_t x_d0, int64_t x_d1, int64_t out_d0) {
    kernel(static_cast<const float*>(x.data_ptr()), static_cast<float*>(out.data_ptr()), dim, x_d0, x_d1, out_d0);
}
"""

_extension = load_inline(
    name='evokernel_83_RowMean_0cc97cd77b',
    cpp_sources=[_PRELUDE + '#line 1 "kernel.cpp"\n' + KERNEL_SOURCE + "\n" + _LAUNCHER],
    functions=["evokernel_launch"],
    extra_cflags=['-O3', '-march=native', '-fopenmp', '-std=c++17'],
    extra_ldflags=["-fopenmp"],
)


class ModelNew(nn.Module):
    """torch.mean along axis `dim` (1: over each row), keepdim=False."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim
        self.evokernel_init = {'dim': dim}

    def forward(self, x):
        x = x.detach().contiguous()
        out = torch.empty((x.shape[0],), dtype=torch.float32, device=x.device)
        _extension.evokernel_launch(x, out, int(self.evokernel_init['dim']), x.shape[0], x.shape[1], out.shape[0])
        return out
