"""EvoKernel's best (and first feasible) kernel for 37_Cumsum, as a KernelBench ModelNew (attempt 740332f892a443f2b49892fba57009d8, iteration 6).

Standalone: needs torch and a C++ compiler with OpenMP, nothing of EvoKernel. The kernel
below (KERNEL_SOURCE, exactly as EvoKernel verified it) is built with load_inline and called
through `evokernel_launch` with the entry point's arguments: data pointers, scalars, then
every dimension of every tensor. ModelNew is the task's reference Model with its forward
replaced: the same constructor, so the same parameters from the same seed.
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

batch_size = 128
length = 4096
dim = 1

KERNEL_SOURCE = r'''#include <cmath>
#include <algorithm>

extern "C" void kernel(
    const float* x,  // input, float32 [x_d0 x x_d1] (now 128x4096)
    float* out,      // output, float32 [out_d0 x out_d1] (now 128x4096)
    int64_t dim,     // constructor argument dim (now 1)
    int64_t x_d0,    // size of dimension 0 of x (now 128)
    int64_t x_d1,    // size of dimension 1 of x (now 4096)
    int64_t out_d0,  // size of dimension 0 of out (now 128)
    int64_t out_d1   // size of dimension 1 of out (now 4096)
) {
    const int64_t axis = dim < 0 ? dim + 2 : dim;
    const int64_t lines = axis == 1 ? x_d0 : x_d1;  // independent scans
    const int64_t len = axis == 1 ? x_d1 : x_d0;    // elements in one scan
    const int64_t step = axis == 1 ? 1 : x_d1;      // distance between neighbours in a scan
    const int64_t gap = axis == 1 ? x_d1 : 1;       // distance between the starts of two scans
#pragma omp parallel for schedule(static)
    for (int64_t l = 0; l < lines; ++l) {
        double acc = 0.0;
        for (int64_t i = 0; i < len; ++i) {
            const int64_t at = l * gap + i * step;
            acc += x[at];
            out[at] = static_cast<float>(acc);
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
extern "C" void kernel(const float* x, float* out, int64_t dim, int64_t x_d0, int64_t x_d1, int64_t out_d0, int64_t out_d1);
"""

_LAUNCHER = """
void evokernel_launch(torch::Tensor x, torch::Tensor out, int64_t dim, int64_t x_d0, int64_t x_d1, int64_t out_d0, int64_t out_d1) {
    kernel(static_cast<const float*>(x.data_ptr()), static_cast<float*>(out.data_ptr()), dim, x_d0, x_d1, out_d0, out_d1);
}
"""

_extension = load_inline(
    name='evokernel_37_Cumsum_dc70df311b',
    cpp_sources=[_PRELUDE + '#line 1 "kernel.cpp"\n' + KERNEL_SOURCE + "\n" + _LAUNCHER],
    functions=["evokernel_launch"],
    extra_cflags=['-O3', '-march=native', '-fopenmp', '-std=c++17'],
    extra_ldflags=["-fopenmp"],
)


class ModelNew(nn.Module):
    """out[..., i] = sum of x[..., :i + 1] along axis `dim`."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim
        self.evokernel_init = {'dim': dim}

    def forward(self, x):
        x = x.detach().contiguous()
        out = torch.empty((x.shape[0], x.shape[1]), dtype=torch.float32, device=x.device)
        _extension.evokernel_launch(x, out, int(self.evokernel_init['dim']), x.shape[0], x.shape[1], out.shape[0], out.shape[1])
        return out
