# task: level1/35_Conv2d.py
# expect-gate: ok
"""Direct 2-d convolution (stride 1, no padding) as a C++ extension."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_SOURCE = r"""
#include <torch/extension.h>

void conv2d_direct(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, torch::Tensor out) {
    const int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
    const int64_t F = weight.size(0), KH = weight.size(2), KW = weight.size(3);
    const int64_t OH = out.size(2), OW = out.size(3);
    const float* xs = x.data_ptr<float>();
    const float* ws = weight.data_ptr<float>();
    const float* bs = bias.data_ptr<float>();
    float* os = out.data_ptr<float>();
#pragma omp parallel for collapse(2)
    for (int64_t n = 0; n < N; ++n) {
        for (int64_t f = 0; f < F; ++f) {
            float* dst = os + (n * F + f) * OH * OW;
            for (int64_t i = 0; i < OH * OW; ++i) dst[i] = bs[f];
            for (int64_t c = 0; c < C; ++c) {
                const float* src = xs + (n * C + c) * H * W;
                const float* wgt = ws + (f * C + c) * KH * KW;
                for (int64_t kh = 0; kh < KH; ++kh) {
                    for (int64_t kw = 0; kw < KW; ++kw) {
                        const float wv = wgt[kh * KW + kw];
                        for (int64_t oh = 0; oh < OH; ++oh) {
                            const float* row = src + (oh + kh) * W + kw;
                            float* drow = dst + oh * OW;
                            for (int64_t ow = 0; ow < OW; ++ow) drow[ow] += wv * row[ow];
                        }
                    }
                }
            }
        }
    }
}
"""

_ext = load_inline(
    name="evk_cand_conv2d_direct",
    cpp_sources=_SOURCE,
    functions=["conv2d_direct"],
    extra_cflags=["-O3", "-fopenmp"],
    extra_ldflags=["-fopenmp"],
)


class ModelNew(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.kernel_size = kernel_size
        # Same names and shapes as the reference's nn.Conv2d (conv.weight, conv.bias).
        self.conv = nn.Module()
        self.conv.weight = nn.Parameter(
            torch.zeros(out_channels, in_channels, kernel_size, kernel_size)
        )
        self.conv.bias = nn.Parameter(torch.zeros(out_channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n, _, h, w = x.shape
        k = self.kernel_size
        out = torch.empty((n, self.conv.weight.shape[0], h - k + 1, w - k + 1), dtype=x.dtype)
        _ext.conv2d_direct(x, self.conv.weight.contiguous(), self.conv.bias.contiguous(), out)
        return out
