"""Near-repeats: code that differs only in comments, layout or its own names has one
fingerprint; code that can compute something else never shares one."""

from __future__ import annotations

import pytest

from actors.code_extraction import code_fingerprint
from actors.fingerprint import normalised

RELU = '''#include <cstdint>
// ReLU, elementwise
extern "C" void kernel(const float* x, float* out, int64_t x_d0, int64_t x_d1) {
    const int64_t n = x_d0 * x_d1;  /* every element */
    #pragma omp parallel for
    for (int64_t i = 0; i < n; ++i) out[i] = x[i] > 0.f ? x[i] : 0.f;
}
'''
RELU_RENAMED = '''#include <cstdint>
extern "C" void kernel(const float* __restrict__ input, float* y, int64_t rows, int64_t cols)
{
  // one pass
  const int64_t total = rows * cols;
  #pragma omp parallel for   // threads
  for (int64_t k = 0; k < total; ++k)
      y[k] = input[k] > 0.f ? input[k] : 0.f;
}
'''

MODELNEW = '''import torch
from torch.utils.cpp_extension import load_inline

SOURCE = """
torch::Tensor relu(torch::Tensor x) { return x.clamp_min(0); }  // clamp
"""
mod = load_inline(name="relu_ext", cpp_sources=SOURCE, functions=["relu"])


class ModelNew(torch.nn.Module):
    """ReLU through an extension."""

    def forward(self, x):  # one call
        y = mod.relu(x)
        return y
'''


def test_comments_layout_and_own_names_do_not_make_new_code():
    assert code_fingerprint(RELU) == code_fingerprint(RELU.replace("// ReLU, elementwise\n", ""))
    assert code_fingerprint(RELU) == code_fingerprint(" ".join(RELU.split(" ")).replace("\n    ", "\n\t"))
    plain = RELU.replace("__restrict__ ", "")
    assert code_fingerprint(plain) == code_fingerprint(RELU_RENAMED.replace("__restrict__ ", ""))
    renamed = (MODELNEW.replace("y = mod", "out = mod").replace("return y", "return out")
               .replace("# one call", "").replace('"""ReLU through an extension."""', '"""ReLU."""')
               .replace("// clamp", ""))
    assert code_fingerprint(MODELNEW) == code_fingerprint(renamed)


@pytest.mark.parametrize("change", [
    ("x[i] : 0.f", "x[i] : 0.01f"),  # another constant
    ("x[i] > 0.f", "x[i] >= 0.f"),  # another operator
    ("x[i] > 0.f ? x[i] : 0.f", "std::exp(x[i])"),  # another function ...
    ("x[i] > 0.f ? x[i] : 0.f", "std::tanh(x[i])"),  # ... of the same shape
    ("    #pragma omp parallel for\n", ""),  # a pragma dropped
    ("#pragma omp parallel for", "#pragma omp parallel for simd"),
    ("out[i] = x[i]", "out[i] = x[i + 1]"),
    ("int64_t n = x_d0 * x_d1", "int64_t n = x_d0 * x_d0"),  # another name the code uses
    ("const float* x, float* out", "float* out, const float* x"),  # parameters in another order
    ("#include <cstdint>", "#include <cmath>"),
])
def test_code_that_can_compute_something_else_is_new(change):
    old, new = change
    assert old in RELU
    assert code_fingerprint(RELU) != code_fingerprint(RELU.replace(old, new))


def test_library_names_keep_their_spelling():
    assert code_fingerprint("float y = a * M_PI;") != code_fingerprint("float y = a * M_E;")
    assert code_fingerprint("out[i] = expf(x[i]);") != code_fingerprint("out[i] = exp(x[i]);")
    assert code_fingerprint("v = _mm256_add_ps(a, b);") != code_fingerprint("v = _mm256_mul_ps(a, b);")
    assert code_fingerprint("s = p.size();") != code_fingerprint("s = p.length();")
    assert code_fingerprint(MODELNEW) != code_fingerprint(MODELNEW.replace("clamp_min(0)", "clamp_min(1)"))
    assert code_fingerprint(MODELNEW) != code_fingerprint(MODELNEW.replace("mod.relu(x)", "mod.gelu(x)"))


def test_the_normal_form_reads_as_code():
    form = normalised(RELU)
    assert "//" not in form and "every element" not in form and "#pragma omp parallel for" in form
    assert 'extern "C" void kernel' in form and "_v0" in form
