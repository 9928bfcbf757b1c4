# task: level1/40_MSELoss.py
# expect-gate: ok
"""Mean squared error as a C++ extension: an OpenMP reduction in double into a 0-d tensor."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_SOURCE = r"""
#include <torch/extension.h>

void mse(torch::Tensor predictions, torch::Tensor targets, torch::Tensor out) {
    const int64_t n = predictions.numel();
    const float* p = predictions.data_ptr<float>();
    const float* t = targets.data_ptr<float>();
    double total = 0.0;
#pragma omp parallel for reduction(+ : total)
    for (int64_t i = 0; i < n; ++i) {
        const double d = static_cast<double>(p[i]) - t[i];
        total += d * d;
    }
    out.data_ptr<float>()[0] = static_cast<float>(total / n);
}
"""

_ext = load_inline(
    name="evk_cand_mse",
    cpp_sources=_SOURCE,
    functions=["mse"],
    extra_cflags=["-O3", "-fopenmp"],
    extra_ldflags=["-fopenmp"],
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        out = torch.empty((), dtype=predictions.dtype)
        _ext.mse(predictions.contiguous(), targets.contiguous(), out)
        return out
