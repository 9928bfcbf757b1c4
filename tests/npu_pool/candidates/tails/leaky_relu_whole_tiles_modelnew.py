# task: level1/9_LeakyReLU.py
# expect-gate: correctness
# (at the second size: right at the task's own, friendly size)
"""WRONG at a size that is no multiple of its tile: a ModelNew whose C++ extension computes whole
tiles of 64 and writes zeros over the last, partial tile. Right at every power-of-two size."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_SOURCE = r"""
#include <torch/extension.h>

void leaky_relu_tiles(torch::Tensor x, torch::Tensor out, double negative_slope) {
    const float* src = x.data_ptr<float>();
    float* dst = out.data_ptr<float>();
    const int64_t n = x.numel();
    const int64_t whole = n / 64 * 64;
    const float slope = static_cast<float>(negative_slope);
    for (int64_t i = 0; i < whole; ++i) {
        const float v = src[i];
        dst[i] = v >= 0.0f ? v : v * slope;
    }
    for (int64_t i = whole; i < n; ++i) dst[i] = 0.0f;
}
"""

_ext = load_inline(
    name="evk_cand_leaky_relu_tiles",
    cpp_sources=_SOURCE,
    functions=["leaky_relu_tiles"],
    extra_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self, negative_slope: float):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        _ext.leaky_relu_tiles(x, out, self.negative_slope)
        return out
