"""The cuda backend: what it says without a GPU, its kernel-source format, and (where a GPU
is present) device selection, event timing, cache flush, peaks, an nvcc-built kernel and
ModelNew candidates (load_inline CUDA, Triton) through the full verifier."""

from __future__ import annotations

import importlib.util

import pytest
import torch

from npu_pool.backends import backend_status
from npu_pool.backends import cuda as cuda_backend
from npu_pool.backends.base import KernelBuildError
from npu_pool.tasks.signature import derive_signature
from npu_pool.verdict import Candidate

from ..harness_support import SMALL_BYTES, SUITE, harness_config

gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

RELU_HOST = r"""
__global__ void relu_kernel(const float* x, float* out, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

extern "C" void kernel(const float* x, float* out, int64_t x_d0, int64_t x_d1, int64_t out_d0, int64_t out_d1,
                       cudaStream_t stream) {
    const int64_t n = x_d0 * x_d1;
    relu_kernel<<<(unsigned)((n + 255) / 256), 256, 0, stream>>>(x, out, n);
}
"""


@pytest.fixture(scope="module")
def relu_signature():
    reference = torch.nn.ReLU()
    x = torch.randn(64, 96)
    return derive_signature(reference, ["x"], [x], [reference(x)], [], [])


def test_without_a_gpu_the_backend_says_why():
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    available, why = backend_status("cuda")
    assert not available
    assert ("no CUDA support" in why) if torch.version.cuda is None else ("CUDA_VISIBLE_DEVICES" in why)


def test_rendered_host_entry_point(relu_signature):
    text = cuda_backend.CudaBackend().render_kernel_signature(relu_signature)
    assert 'extern "C" void kernel(' in text and "device pointers" in text
    assert "const float* x," in text and "float* out," in text and "int64_t out_d1," in text
    assert "cudaStream_t stream" in text  # the stream the harness times, last


def test_missing_nvcc_is_a_build_error(relu_signature, tmp_path, monkeypatch):
    monkeypatch.setattr(cuda_backend, "find_nvcc", lambda: None)
    with pytest.raises(KernelBuildError, match="nvcc not found"):
        cuda_backend.CudaBackend().compile_kernel(RELU_HOST, relu_signature, tmp_path, tmp_path / "cache")


# --- on a GPU -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def backend():
    return cuda_backend.CudaBackend()


@gpu
@pytest.mark.gpu
def test_selects_the_device_and_times_device_work(backend):
    assert backend.is_available() == (True, "")
    backend.synchronize()
    assert torch.cuda.current_device() == backend.index
    # references are full float32 (cuDNN's TF32 default made an exact conv kernel fail)
    assert not torch.backends.cudnn.allow_tf32 and not torch.backends.cuda.matmul.allow_tf32
    timer = backend.timer()
    timer.start()
    torch.cuda._sleep(50_000_000)  # tens of milliseconds of spinning on the device
    timer.stop()
    busy = timer.elapsed_ms()
    timer = backend.timer()
    timer.start()
    timer.stop()
    assert busy > 1.0 and timer.elapsed_ms() < busy


@gpu
@pytest.mark.gpu
def test_timer_ignores_a_patched_event_class(backend, monkeypatch):
    backend.synchronize()  # binds the event functions, as the worker does before candidates load
    monkeypatch.setattr(torch.cuda.Event, "elapsed_time", lambda self, end: 0.0)
    timer = backend.timer()
    timer.start()
    torch.cuda._sleep(20_000_000)
    timer.stop()
    assert timer.elapsed_ms() > 0.1


@gpu
@pytest.mark.gpu
def test_flush_memory_stats_and_peaks(backend):
    backend.flush_cache()
    stats = backend.memory_stats()
    assert stats["allocated"] >= 256 * 2**20 and stats["total"] > stats["free"] > 0
    peaks = backend.measure_peaks()
    assert 50 < peaks.gbps < 20_000 and 500 < peaks.gflops < 500_000


@gpu
@pytest.mark.gpu
def test_nvcc_kernel_compiles_once_and_matches(backend, relu_signature, tmp_path):
    if cuda_backend.find_nvcc() is None:
        pytest.skip("no nvcc")
    artifact = backend.compile_kernel(RELU_HOST, relu_signature, tmp_path, tmp_path / "cache")
    assert backend.compile_kernel(RELU_HOST, relu_signature, tmp_path, tmp_path / "cache") == artifact
    module = backend.wrap_kernel(artifact, relu_signature, torch.nn.ReLU())
    x = torch.randn(64, 96, device=backend.device)
    torch.testing.assert_close(module(x), torch.relu(x))


CUDA_MODELNEW = r'''
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CUDA = """
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
__global__ void relu_kernel(const float* x, float* out, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i] > 0.0f ? x[i] : 0.0f;
}
torch::Tensor relu(torch::Tensor x) {
    auto out = torch::empty_like(x);
    const int64_t n = x.numel();
    relu_kernel<<<(n + 255) / 256, 256, 0, at::cuda::getCurrentCUDAStream()>>>(x.data_ptr<float>(), out.data_ptr<float>(), n);
    return out;
}
"""
_ext = load_inline(name="evk_test_cuda_relu", cpp_sources="torch::Tensor relu(torch::Tensor x);",
                   cuda_sources=_CUDA, functions=["relu"])


class ModelNew(nn.Module):
    def forward(self, x):
        return _ext.relu(x.contiguous())
'''

TRITON_MODELNEW = r'''
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.maximum(x, 0.0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        relu_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
        return out
'''


@gpu
@pytest.mark.gpu
@pytest.mark.slow
@pytest.mark.parametrize("source", [CUDA_MODELNEW, TRITON_MODELNEW], ids=["load_inline", "triton"])
def test_modelnew_candidates_pass_the_verifier_on_cuda(source):
    from npu_pool.tasks.spec import load_task
    from npu_pool.verifier import verify

    if "triton" in source and importlib.util.find_spec("triton") is None:
        pytest.skip("triton is not installed")
    task = load_task(SUITE / "level1" / "4_ReLU.py", max_bytes=SMALL_BYTES)
    verdict = verify(task, Candidate(source=source, format="modelnew"), harness_config(backend="cuda", run_timeout_s=300.0))
    assert verdict.feasible, verdict.model_dump_json(indent=1)
