"""Infrastructure failures are never candidate verdicts (issue 15, points 1 and 3).

A backend that cannot run here fails fast with what is missing, before anything is compiled;
a device or harness failure inside the sandboxed worker comes back with gate `infra`. On
this CPU-only machine the cuda backend is the real unavailable device.
"""

from __future__ import annotations

import json

import pytest
import torch

from launch.cli import main
from npu_pool import verifier
from npu_pool.backends import backend_ready, get_backend
from npu_pool.backends.cpu import CpuBackend
from npu_pool.sandbox import runner as sandbox
from npu_pool.sandbox.failure_text import infra_category
from npu_pool.verifier import evaluate, sandboxed_gates

from ..harness_support import FIXTURES, fixture_candidate, fixture_task, harness_config

needs_no_gpu = pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA GPU is present: cuda is available")
RELU_TASK = str(FIXTURES / "tasks" / "huge_relu.py")
RELU_KERNEL = str(FIXTURES / "candidates" / "relu.cpp")


@pytest.mark.parametrize("message, category", [
    ("OSError: CUDA_HOME environment variable is not set. Please set it to your CUDA install root.", "toolchain_missing"),
    ("RuntimeError: No CUDA GPUs are available; no CUDA-capable device is detected", "device_unavailable"),
    ("AssertionError: Torch not compiled with CUDA enabled", "device_unavailable"),
    ("RuntimeError: CUDA error: initialization error", "device_init"),
    ("RuntimeError: Unexpected error from cudaGetDeviceCount(). Error 2: out of memory", "device_init"),
    ("RuntimeError: The NVIDIA driver on your system is too old (found version 11040); driver version is insufficient",
     "device_init"),
    ("RuntimeError: call aclInit failed, error code is 507033", "device_init"),
    ("RuntimeError: Initialize:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:217 NPU function error: "
     "aclrtSetDevice(device_id_), error code is 107001", "device_init"),
])
def test_runtime_and_toolchain_messages_are_infrastructure(message, category):
    assert infra_category(message) == category


@pytest.mark.parametrize("message", [
    "RuntimeError: CUDA error: an illegal memory access was encountered",
    "IndexError: index 7 is out of bounds for dimension 0 with size 4",
    "kernel.cpp:3:5: error: 'foo' was not declared in this scope",
])
def test_candidate_faults_are_not_infrastructure(message):
    assert infra_category(message) is None


@needs_no_gpu
def test_the_cuda_backend_says_what_is_missing():
    for fmt in (None, "kernel", "modelnew"):
        ready, why = backend_ready("cuda", fmt)
        assert not ready
        assert why.startswith("the cuda backend cannot run here: ")
        assert ("no CUDA support" in why) if torch.version.cuda is None else ("CUDA_VISIBLE_DEVICES" in why)
    assert backend_ready("cpu", "kernel") == (True, "")


def test_a_missing_compiler_is_named(monkeypatch):
    monkeypatch.setenv("CXX", "/nonexistent/g++-99")
    backend = CpuBackend()
    assert backend.is_available() == (True, "")
    ready, why = backend.ready("kernel")
    assert not ready and "/nonexistent/g++-99 not found" in why
    ready, why = backend.ready("modelnew")  # load_inline's compiler (torch reads CXX too)
    assert not ready and "load_inline" in why


@pytest.fixture
def no_sandbox(monkeypatch):
    """Fails the test if anything would start a sandboxed worker (and so compile)."""
    def refused(*args, **kwargs):
        raise AssertionError("a sandboxed worker was started for a backend that cannot run here")

    monkeypatch.setattr(verifier, "run_worker", refused)
    monkeypatch.setattr(sandbox.WarmServer, "start", refused)


@needs_no_gpu
def test_evaluate_fails_fast_with_an_infra_verdict(no_sandbox):
    task = fixture_task("huge_relu")
    verdict, report = evaluate(task, fixture_candidate("relu.cpp"), harness_config(backend="cuda"))
    assert set(verdict.timings) == {"total_s"}  # nothing compiled, no sandbox started, no static gate
    assert report is None and not verdict.feasible
    assert (verdict.gate, verdict.category) == ("infra", "backend_unavailable")
    assert "cuda backend cannot run here" in verdict.reason


@needs_no_gpu
@pytest.mark.parametrize("candidate", ["relu.cpp", "modelnew_returns_input.py"])
def test_the_sandboxed_worker_reports_an_unusable_device_as_infra(candidate):
    """Past the verifier's check (as when a device fails between the check and the worker): the
    worker probes the device before any candidate code and blames the machine."""
    task = fixture_task("huge_relu")
    verdict, report = sandboxed_gates(task, fixture_candidate(candidate), harness_config(backend="cuda"),
                                      get_backend("cuda"), profile=False)
    assert report is None and not verdict.feasible
    assert verdict.gate == "infra", (verdict.gate, verdict.category, verdict.reason)
    assert verdict.category in ("device_unavailable", "backend_unavailable")
    assert "cuda" in verdict.reason and "compile_s" not in verdict.timings  # nothing was built


def test_a_harness_failure_before_candidate_code_is_infra():
    """The worker cannot even execute the task (a harness fault): not the candidate's."""
    task = fixture_task("huge_relu")
    broken = task.model_copy(update={"source": task.source + "\nraise RuntimeError('the harness lost the task')\n"})
    verdict, _ = sandboxed_gates(broken, fixture_candidate("relu.cpp"), harness_config(), get_backend("cpu"),
                                 profile=False)
    assert (verdict.gate, verdict.category) == ("infra", "harness_error"), verdict.reason
    assert "the harness lost the task" in verdict.reason and "during startup" in verdict.reason


@needs_no_gpu
@pytest.mark.parametrize("command", ["verify", "profile"])
def test_cli_with_an_unusable_backend_exits_2_at_once(command, capsys, no_sandbox):
    code = main([command, RELU_TASK, RELU_KERNEL, "--backend", "cuda", "--json"])
    assert code == 2
    err = capsys.readouterr().err
    assert "the cuda backend cannot run here" in err


def test_cli_exits_2_on_an_infra_verdict_from_the_worker(capsys, tmp_path, monkeypatch):
    """An infra verdict that comes back from the sandbox (here a task the worker cannot run)
    exits 2, not 1: the candidate was not judged."""
    from launch.commands import verify

    real = verify.load_inputs

    def broken_task(args, settings):
        task, candidate = real(args, settings)
        return task.model_copy(update={"source": task.source + "\nraise RuntimeError('no task here')\n"}), candidate

    monkeypatch.setattr(verify, "load_inputs", broken_task)
    monkeypatch.setenv("EVOKERNEL_HARNESS__FIT_MAX_BYTES", str(4 * 2**20))
    code = main(["verify", RELU_TASK, RELU_KERNEL, "--json"])
    out = capsys.readouterr().out
    line = json.loads(out.strip().splitlines()[-1])
    assert code == 2 and line["gate"] == "infra" and "NOT JUDGED" in out


def test_doctor_fails_the_configured_backend_when_it_cannot_run(capsys, monkeypatch):
    if torch.cuda.is_available():
        pytest.skip("a CUDA GPU is present")
    monkeypatch.setenv("EVOKERNEL_HARNESS__BACKEND", "cuda")
    from launch.commands.doctor import _configured_backend_check
    from launch.config import Settings

    with pytest.raises(RuntimeError, match="the cuda backend cannot run here"):
        _configured_backend_check(Settings())()
