"""The CUDA kernel format on the prompt side: a cuda task in the kernel format gets CUDA's
instructions, guide and worked example (the CPU and ModelNew prompts are unchanged), the
brief carries the signature rendered for CUDA, and the format falls back to ModelNew where
the cuda backend cannot build kernels (no nvcc)."""

from __future__ import annotations

import pytest

from actors.briefing import candidate_format_for, task_brief
from actors.config import LLMConfig
from actors.messages import DraftRequest, RefineRequest, StartPoint, TaskBrief
from actors.prompting import PromptBuilder
from npu_pool.backends import cuda as cuda_backend
from npu_pool.backends.cpu import CpuBackend
from npu_pool.backends.cuda_kernel import render_cuda_signature
from npu_pool.tasks.spec import load_task
from tests.npu_pool.harness_support import SMALL_BYTES, SUITE

SIGNATURE = ('extern "C" void kernel(const float* x, float* out, int64_t x_d0, int64_t out_d0, '
             'cudaStream_t stream);')


def _task(backend: str) -> TaskBrief:
    return TaskBrief(task_id="4_ReLU", backend=backend, reference_source="class Model(nn.Module):\n    pass\n",
                     sizes={"batch_size": 16, "dim": 1024}, signature=SIGNATURE if backend == "cuda" else None)


def test_cuda_kernel_draft_has_cuda_instructions_guide_and_example():
    messages = PromptBuilder(LLMConfig(), "kernel").draft(DraftRequest(task=_task("cuda"))).messages
    system, example_user, example_answer, user = (m["content"] for m in messages)
    assert "nvcc" in system and "cudaStream_t stream" in system and "g++" not in system and "OpenMP" not in system
    assert "<<<grid, block, shared_bytes, stream>>>" in system
    assert "cudaStream_t stream   // the stream to launch" in example_user
    assert "__global__ void scaled_add_kernel" in example_answer and "0, stream>>>" in example_answer
    assert SIGNATURE in user and "grid-stride loop" in system and "load_inline" not in system + user


def test_plain_style_gets_the_plain_cuda_instructions():
    plain = PromptBuilder(LLMConfig(prompt_style="plain"), "kernel").draft(DraftRequest(task=_task("cuda"))).messages
    assert "runs on the CPU" in plain[0]["content"] and "<<<blocks, 256, 0, stream>>>" in plain[0]["content"]
    assert "#pragma omp" not in plain[0]["content"]


def test_refine_uses_the_cuda_example_too():
    start = StartPoint(id="s", code="// start", latency_ms=1.0, profile="")
    request = RefineRequest(task=_task("cuda"), start=start, best_latency_ms=1.0)
    messages = PromptBuilder(LLMConfig(), "kernel").refine(request).messages
    assert "scaled_add_kernel" in messages[2]["content"] and "nvcc" in messages[0]["content"]


def test_other_backends_and_formats_keep_their_prompts():
    cpu = PromptBuilder(LLMConfig(), "kernel").draft(DraftRequest(task=_task("cpu"))).messages
    assert "g++" in cpu[0]["content"] and "#pragma omp parallel for" in cpu[2]["content"]
    assert "cudaStream_t" not in "".join(m["content"] for m in cpu)
    modelnew = PromptBuilder(LLMConfig(), "modelnew").draft(DraftRequest(task=_task("cuda"))).messages
    assert "class ModelNew" in modelnew[0]["content"] and "load_inline" in modelnew[0]["content"]


@pytest.fixture(scope="module")
def relu_task():
    return load_task(SUITE / "level1" / "4_ReLU.py", max_bytes=SMALL_BYTES)


def test_kernel_format_falls_back_to_modelnew_without_nvcc(monkeypatch, relu_task):
    config = LLMConfig(candidate_format="kernel")
    monkeypatch.setattr(cuda_backend, "find_nvcc", lambda: None)
    assert candidate_format_for(config, cuda_backend.CudaBackend(), relu_task) == "modelnew"
    monkeypatch.setattr(cuda_backend, "find_nvcc", lambda: "/usr/local/cuda/bin/nvcc")
    assert candidate_format_for(config, cuda_backend.CudaBackend(), relu_task) == "kernel"
    assert candidate_format_for(config, CpuBackend(), relu_task) == "kernel"


def test_brief_carries_the_signature_rendered_for_cuda(relu_task):
    brief = task_brief(relu_task, cuda_backend.CudaBackend(), "kernel")
    assert brief.signature == render_cuda_signature(relu_task.kernel_signature)
    assert brief.signature.rstrip().endswith("cudaStream_t stream   // the stream to launch every kernel on (the harness times this stream)\n);")
