# task: level1/31_MaxPool2d.py
# expect-gate: ok
"""2-d max pooling as a C++ extension; padded positions are skipped, never compared."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_SOURCE = r"""
#include <torch/extension.h>
#include <limits>

void max_pool2d(torch::Tensor x, torch::Tensor out, int64_t kernel_size, int64_t stride,
                int64_t padding) {
    const int64_t planes = x.size(0) * x.size(1), H = x.size(2), W = x.size(3);
    const int64_t OH = out.size(2), OW = out.size(3);
    const float* src_all = x.data_ptr<float>();
    float* dst_all = out.data_ptr<float>();
#pragma omp parallel for
    for (int64_t p = 0; p < planes; ++p) {
        const float* src = src_all + p * H * W;
        float* dst = dst_all + p * OH * OW;
        for (int64_t oh = 0; oh < OH; ++oh) {
            for (int64_t ow = 0; ow < OW; ++ow) {
                float best = -std::numeric_limits<float>::infinity();
                for (int64_t kh = 0; kh < kernel_size; ++kh) {
                    const int64_t h = oh * stride - padding + kh;
                    if (h < 0 || h >= H) continue;
                    for (int64_t kw = 0; kw < kernel_size; ++kw) {
                        const int64_t w = ow * stride - padding + kw;
                        if (w < 0 || w >= W) continue;
                        const float v = src[h * W + w];
                        best = v > best ? v : best;
                    }
                }
                dst[oh * OW + ow] = best;
            }
        }
    }
}
"""

_ext = load_inline(
    name="evk_cand_max_pool2d",
    cpp_sources=_SOURCE,
    functions=["max_pool2d"],
    extra_cflags=["-O3", "-fopenmp"],
    extra_ldflags=["-fopenmp"],
)


class ModelNew(nn.Module):
    def __init__(self, kernel_size: int, stride: int, padding: int):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n, c, h, w = x.shape
        oh = (h + 2 * self.padding - self.kernel_size) // self.stride + 1
        ow = (w + 2 * self.padding - self.kernel_size) // self.stride + 1
        out = torch.empty((n, c, oh, ow), dtype=x.dtype)
        _ext.max_pool2d(x, out, self.kernel_size, self.stride, self.padding)
        return out
