"""EvoKernel's best (and first feasible) kernel for 84_SumOfSquaresOverLastDim, as a KernelBench ModelNew (attempt d5b6329d9e5b4bb88255411a811d39f6, iteration 1).

Standalone: needs torch and a C++ compiler with OpenMP, nothing of EvoKernel. The kernel
below (KERNEL_SOURCE, exactly as EvoKernel verified it) is built with load_inline and called
through `evokernel_launch` with the entry point's arguments: data pointers, scalars, then
every dimension of every tensor. ModelNew is the task's reference Model with its forward
replaced: the same constructor, so the same parameters from the same seed.
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

batch_size = 32
dim1 = 256
dim2 = 256
dim = 2

KERNEL_SOURCE = r'''#include <cmath>
#include <algorithm>

extern "C" void kernel(const float* x, float* out, int64_t dim,
                       int64_t x_d0, int64_t x_d1, int64_t x_d2, int64_t out_d0, int64_t out_d1) {
    const int64_t sizes[3] = {x_d0, x_d1, x_d2};
    const int64_t axis = dim < 0 ? dim + 3 : dim;
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= sizes[d];
    for (int64_t d = axis + 1; d < 3; ++d) inner *= sizes[d];
    const int64_t reduced = sizes[axis];
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t o = 0; o < outer; ++o) {
        for (int64_t i = 0; i < inner; ++i) {
            float acc = 0.0f;
            for (int64_t r = 0; r < reduced; ++r) acc += x[(o * reduced + r) * inner + i] * x[(o * reduced + r) * inner + i];
            out[o * inner + i] = static_cast<float>(acc);
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
extern "C" void kernel(const float* x, float* out, int64_t dim, int64_t x_d0, int64_t x_d1, int64_t x_d2, int64_t out_d0, int64_t out_d1);
"""

_LAUNCHER = """
void evokernel_launch(torch::Tensor x, torch::Tensor out, int64_t dim, int64_t x_d0, int64_t x_d1, int64_t x_d2, int64_t out_d0, int64_t out_d1) {
    kernel(static_cast<const float*>(x.data_ptr()), static_cast<float*>(out.data_ptr()), dim, x_d0, x_d1, x_d2, out_d0, out_d1);
}
"""

_extension = load_inline(
    name='evokernel_84_SumOfSquaresOverLastDim_f624b42b82',
    cpp_sources=[_PRELUDE + '#line 1 "kernel.cpp"\n' + KERNEL_SOURCE + "\n" + _LAUNCHER],
    functions=["evokernel_launch"],
    extra_cflags=['-O3', '-march=native', '-fopenmp', '-std=c++17'],
    extra_ldflags=["-fopenmp"],
)


class ModelNew(nn.Module):
    """torch.sum(x * x) along axis `dim` (the last one here)."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim
        self.evokernel_init = {'dim': dim}

    def forward(self, x):
        x = x.detach().contiguous()
        out = torch.empty((x.shape[0], x.shape[1]), dtype=torch.float32, device=x.device)
        _extension.evokernel_launch(x, out, int(self.evokernel_init['dim']), x.shape[0], x.shape[1], x.shape[2], out.shape[0], out.shape[1])
        return out
