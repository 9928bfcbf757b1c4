"""The torch.compile baseline's cache keeps what was measured, never a fault of the sandbox or
the machine (npu_pool.gates.infra_faults): early runs' read rules made torch.compile fail with a
PermissionError on the task's source, and that error was cached and shown for good."""

from __future__ import annotations

import json
import shutil

import pytest
import torch

from npu_pool import harness_cache
from npu_pool.backends import get_backend
from npu_pool.backends.base import DevicePeaks
from npu_pool.gates import profiler
from npu_pool.gates.infra_faults import fault_of, is_fault_text
from npu_pool.sandbox import runner as sandbox
from npu_pool.sandbox.confinement import landlock_abi
from npu_pool.tasks.sizing import exec_task
from npu_pool.tasks.spec import load_task
from npu_pool.verifier import evaluate

from ..harness_support import FIXTURES, fixture_candidate, fixture_task, harness_config

# What the first read rules left in ~/.cache/evokernel/build/compile_baselines.json on this machine.
POISONED = "InternalTorchDynamoError: PermissionError: [Errno 13] Permission denied: '/work/main/suites/cpu/level1/4_ReLU.py'"


def _wrapped(cause: BaseException) -> RuntimeError:
    """An error raised while handling `cause`, as torch.compile wraps what it hit."""
    try:
        try:
            raise cause
        except BaseException as exc:
            raise RuntimeError("InternalTorchDynamoError: something went wrong while tracing") from exc
    except RuntimeError as outer:
        return outer


def test_faults_of_the_sandbox_or_the_machine_are_told_from_the_code_s_own_errors():
    assert fault_of(_wrapped(PermissionError(13, "Permission denied", "/work/main/suites/x.py"))).startswith(
        "PermissionError: [Errno 13] Permission denied")
    assert fault_of(FileNotFoundError(2, "No such file or directory", "/usr/include/python3.11/Python.h"))
    assert fault_of(MemoryError()) == "MemoryError:"  # the memory limit (RLIMIT_DATA)
    # a compiler's words quoted by a build error that is no OSError
    build = RuntimeError("C++ compile error\n/tmp/x/main.cpp:1:10: fatal error: Python.h: Permission denied\n")
    assert fault_of(build) == "/tmp/x/main.cpp:1:10: fatal error: Python.h: Permission denied"
    # the code's own failures are outcomes
    assert fault_of(RuntimeError("Unsupported: call_function aten.foo")) is None
    assert fault_of(_wrapped(ValueError("shape mismatch"))) is None
    assert is_fault_text(POISONED) and not is_fault_text("Unsupported: dynamic shapes") and not is_fault_text(None)


def _measure(tmp_path, monkeypatch, compile_with):
    """`measure` in this process on the CPU with torch.compile replaced by `compile_with`."""
    spec = fixture_task("huge_relu", max_bytes=2**20)
    monkeypatch.setattr(profiler, "device_peaks", lambda backend: DevicePeaks(gbps=1e12, gflops=1e12, method="test"))
    monkeypatch.setattr(torch, "compile", compile_with)
    config = harness_config(warmup_trials=1, timed_trials=3, compile_baseline=True)
    report = profiler.measure(exec_task(spec.source, str(spec.path)), spec, lambda reference, seed: torch.nn.ReLU(),
                              get_backend("cpu"), config, tmp_path)
    return report, tmp_path / "compile_baselines.json"


def _refused(model):
    raise _wrapped(PermissionError(13, "Permission denied", "/work/main/suites/cpu/level1/4_ReLU.py"))


def _unsupported(model):
    raise RuntimeError("Unsupported: this operator has no lowering")


@pytest.mark.parametrize("deferred", [False, True])  # written at once (outside a sandbox), or by the parent
def test_a_refused_baseline_is_reported_but_not_cached(tmp_path, monkeypatch, deferred):
    monkeypatch.setattr(harness_cache, "_deferred", {} if deferred else None)
    monkeypatch.setattr(harness_cache, "_on_record", None)
    report, cache = _measure(tmp_path, monkeypatch, _refused)
    assert report.baseline_compile_ms is None
    assert "PermissionError" in report.baseline_compile_error and "not cached" in report.baseline_compile_error
    # the placeholder recorded before compiling was taken back too
    written = harness_cache.pending().get(str(cache), {}) if deferred else harness_cache.read_json(cache)
    assert written == {}


def test_a_real_failure_is_cached_and_a_cached_fault_is_measured_again(tmp_path, monkeypatch):
    monkeypatch.setattr(harness_cache, "_deferred", None)
    report, cache = _measure(tmp_path, monkeypatch, _unsupported)
    [(key, entry)] = harness_cache.read_json(cache).items()
    assert entry == {"ms": None, "error": "RuntimeError: Unsupported: this operator has no lowering"}
    assert report.baseline_compile_error == entry["error"]
    # an earlier run's cached refusal is not believed: compiled again, the outcome replaces it
    cache.write_text(json.dumps({key: {"ms": None, "error": POISONED}}))
    report, _ = _measure(tmp_path, monkeypatch, lambda model: model)  # "compiled": the model itself
    assert report.baseline_compile_ms is not None and report.baseline_compile_error is None
    assert harness_cache.read_json(cache)[key]["error"] is None and harness_cache.read_json(cache)[key]["ms"] > 0


@pytest.mark.slow
@pytest.mark.skipif(landlock_abi() < 1, reason="no Landlock on this kernel: nothing refuses a read")
def test_through_the_sandbox_a_refusal_is_not_cached_and_the_next_run_measures(tmp_path, monkeypatch):
    """The real sandbox, with the first read rules back (the task's source not readable): the
    refusal comes back in the report, nothing is cached; with today's rules the next
    evaluation measures torch.compile and caches its time."""
    task_dir = tmp_path / "tasks"  # outside every readable folder (the cache is tmp_path / "cache")
    task_dir.mkdir()
    shutil.copy(FIXTURES / "tasks" / "huge_relu.py", task_dir / "huge_relu.py")
    task = load_task(task_dir / "huge_relu.py", max_bytes=2**20)
    config = harness_config(compile_baseline=True, build_cache_dir=str(tmp_path / "cache"), run_timeout_s=300.0)
    cache = tmp_path / "cache" / "compile_baselines.json"
    real_order = sandbox.RunOrder

    def first_rules(**fields):
        fields["readable"] = [p for p in fields["readable"] if p != task.path]
        return real_order(**fields)

    with monkeypatch.context() as patched:
        patched.setattr(sandbox, "RunOrder", first_rules)
        verdict, report = evaluate(task, fixture_candidate("relu.cpp"), config)
    assert verdict.feasible and report is not None, verdict.model_dump_json(indent=1)
    assert report.baseline_compile_ms is None, "torch.compile read the task's source after all"
    assert "Permission denied" in report.baseline_compile_error and "not cached" in report.baseline_compile_error
    assert harness_cache.read_json(cache) == {}

    verdict, report = evaluate(task, fixture_candidate("relu.cpp"), config)
    assert verdict.feasible and report.baseline_compile_error is None, report.baseline_compile_error
    [entry] = harness_cache.read_json(cache).values()
    assert entry == {"ms": report.baseline_compile_ms, "error": None}
