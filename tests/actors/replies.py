"""Scripted LLM replies for 4_ReLU in the kernel-source format (real C, compiled by the harness)."""

SIGNATURE_ARGS = "const float* x, float* out, int64_t x_d0, int64_t x_d1, int64_t out_d0, int64_t out_d1"

# Does not compile: `y` is not declared.
BROKEN = f"""I will write the kernel.
```cpp
extern "C" void kernel({SIGNATURE_ARGS}) {{
    for (int64_t i = 0; i < x_d0 * x_d1; ++i) out[i] = y[i];
}}
```"""

# Wrong result: leaves negatives in.
WRONG = f"""```cpp
extern "C" void kernel({SIGNATURE_ARGS}) {{
    for (int64_t i = 0; i < x_d0 * x_d1; ++i) out[i] = x[i];
}}
```"""

# Correct but deliberately slow: twenty passes through volatile stores.
SLOW = f"""Here is a first version:
```c
#include <cstdint>
extern "C" void kernel({SIGNATURE_ARGS}) {{
    const int64_t n = x_d0 * x_d1;
    for (int rep = 0; rep < 20; ++rep)
        for (int64_t i = 0; i < n; ++i) {{ volatile float v = x[i] > 0.f ? x[i] : 0.f; out[i] = v; }}
}}
```
It loops over every element."""

# Correct and fast: one parallel, vectorisable pass.
FAST = f"""```cpp
#include <cstdint>
extern "C" void kernel({SIGNATURE_ARGS}) {{
    const int64_t n = x_d0 * x_d1;
    #pragma omp parallel for simd
    for (int64_t i = 0; i < n; ++i) out[i] = x[i] > 0.f ? x[i] : 0.f;
}}
```"""

# Correct, but includes a timer header: the static checker flags it for review.
FLAGGED = f"""```cpp
#include <ctime>
#include <cstdint>
extern "C" void kernel({SIGNATURE_ARGS}) {{
    const int64_t n = x_d0 * x_d1;
    for (int64_t i = 0; i < n; ++i) out[i] = x[i] > 0.f ? x[i] : 0.f;
}}
```"""

GARBAGE = "As an AI model I think ReLU is max(x, 0). Good luck!"

# The ModelNew format: a whole file compiling its own C++ with load_inline.
MODELNEW_RELU = '''```python
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_SOURCE = r"""
#include <torch/extension.h>

torch::Tensor relu_out(torch::Tensor x) {
    auto xc = x.contiguous();
    auto out = torch::empty_like(xc);
    const float* xp = xc.data_ptr<float>();
    float* op = out.data_ptr<float>();
    const int64_t n = xc.numel();
    #pragma omp parallel for
    for (int64_t i = 0; i < n; ++i) op[i] = xp[i] > 0.f ? xp[i] : 0.f;
    return out;
}
"""

_ext = load_inline(name="evokernel_test_relu", cpp_sources=_SOURCE, functions=["relu_out"],
                   extra_cflags=["-O3", "-fopenmp"], extra_ldflags=["-fopenmp"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return _ext.relu_out(x)
```'''
