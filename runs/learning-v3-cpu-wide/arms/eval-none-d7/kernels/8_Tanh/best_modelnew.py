"""EvoKernel's best (and first feasible) kernel for 8_Tanh, as a KernelBench ModelNew (attempt 3d2b3a3fb7bb468692dead2635bbfbf7, iteration 1).

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
dim = 16384

KERNEL_SOURCE = r'''#include <cmath>

extern "C" void kernel(const float* x, float* out, int64_t x_d0, int64_t x_d1, int64_t out_d0, int64_t out_d1) {
    const int64_t n = out_d0 * out_d1;
    #pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) {
        float y = x[i];
        out[i] = tanhf(y);
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
extern "C" void kernel(const float* x, float* out, int64_t x_d0, int64_t x_d1, int64_t out_d0, int64_t out_d1);
"""

_LAUNCHER = """
void evokernel_launch(torch::Tensor x, torch::Tensor out, int64_t x_d0, int64_t x_d1, int64_t out_d0, int64_t out_d1) {
    kernel(static_cast<const float*>(x.data_ptr()), static_cast<float*>(out.data_ptr()), x_d0, x_d1, out_d0, out_d1);
}
"""

_extension = load_inline(
    name='evokernel_8_Tanh_ed841f1ef6',
    cpp_sources=[_PRELUDE + '#line 1 "kernel.cpp"\n' + KERNEL_SOURCE + "\n" + _LAUNCHER],
    functions=["evokernel_launch"],
    extra_cflags=['-O3', '-march=native', '-fopenmp', '-std=c++17'],
    extra_ldflags=["-fopenmp"],
)


class ModelNew(nn.Module):
    """Applies tanh to every element."""

    def __init__(self):
        super().__init__()
        self.evokernel_init = {}

    def forward(self, x):
        x = x.detach().contiguous()
        out = torch.empty((x.shape[0], x.shape[1]), dtype=torch.float32, device=x.device)
        _extension.evokernel_launch(x, out, x.shape[0], x.shape[1], out.shape[0], out.shape[1])
        return out
