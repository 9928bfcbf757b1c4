# family: window
"""2-d sum pooling over NCHW images: a square window and a stride, no padding."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """out[b, c, i, j] = sum of x[b, c, i*stride : i*stride + kernel_size, j*stride : j*stride + kernel_size]."""

    def __init__(self, kernel_size: int, stride: int):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        k = self.kernel_size
        return F.avg_pool2d(x, kernel_size=k, stride=self.stride) * (k * k)


batch_size = 2
channels = 16
height = 40
width = 36
kernel_size = 3
stride = 2


def get_inputs():
    x = torch.randn(batch_size, channels, height, width)
    return [x]


def get_init_inputs():
    return [kernel_size, stride]
