"""The backend registry and the CPU backend: timer, kernel compilation and its cache."""

from __future__ import annotations

import pytest

from npu_pool.backends import BackendUnavailable, backend_status, detect_backend, get_backend
from npu_pool.backends.base import KernelBuildError
from npu_pool.tasks.spec import load_task

from ..harness_support import FIXTURES, SMALL_BYTES


def test_registry_and_detection_fall_back_to_cpu():
    cpu = get_backend("cpu")
    assert cpu.name == "cpu" and cpu.device == "cpu"
    assert cpu.is_available() == (True, "")
    assert get_backend("cpu") is cpu
    detected = detect_backend()
    for name in ("npu", "cuda"):
        if not backend_status(name)[0]:
            assert detected.name != name
    with pytest.raises(BackendUnavailable):
        get_backend("tpu")


def test_cpu_timer_measures_elapsed_time():
    import time

    timer = get_backend("cpu").timer()
    outer = time.perf_counter()
    timer.start()
    time.sleep(0.02)
    timer.stop()
    outer_ms = (time.perf_counter() - outer) * 1e3
    # Milliseconds of the sleep, and no more than the span around start and stop (however long a
    # busy machine made that), instead of a fixed upper bound.
    assert 15 <= timer.elapsed_ms() <= outer_ms


def test_kernel_compiles_once_into_the_cache(tmp_path):
    cpu = get_backend("cpu")
    task = load_task(FIXTURES / "tasks" / "huge_relu.py", max_bytes=SMALL_BYTES)
    source = (FIXTURES / "candidates" / "relu.cpp").read_text()
    first = cpu.compile_kernel(source, task.kernel_signature, tmp_path, tmp_path / "cache")
    assert first.exists() and first.parent == tmp_path / "cache"
    mtime = first.stat().st_mtime_ns
    assert cpu.compile_kernel(source, task.kernel_signature, tmp_path, tmp_path / "cache") == first
    assert first.stat().st_mtime_ns == mtime


def test_a_cache_shared_with_another_cpu_model_is_not_reused(tmp_path, monkeypatch):
    # -march=native binaries are keyed by what native means here: another host builds its own.
    import npu_pool.backends.cpu as cpu_module

    cpu = get_backend("cpu")
    task = load_task(FIXTURES / "tasks" / "huge_relu.py", max_bytes=SMALL_BYTES)
    source = (FIXTURES / "candidates" / "relu.cpp").read_text()
    here = cpu.compile_kernel(source, task.kernel_signature, tmp_path, tmp_path / "cache")
    assert cpu_module.host_target(cpu.compiler)  # e.g. "znver3 znver3"
    monkeypatch.setattr(cpu_module, "host_target", lambda compiler: "another-cpu")
    there = cpu.compile_kernel(source, task.kernel_signature, tmp_path, tmp_path / "cache")
    assert there != here and there.exists() and here.exists()


def test_kernel_compile_error_carries_the_compiler_log(tmp_path):
    task = load_task(FIXTURES / "tasks" / "huge_relu.py", max_bytes=SMALL_BYTES)
    source = (FIXTURES / "candidates" / "relu_syntax_error.cpp").read_text()
    with pytest.raises(KernelBuildError) as caught:
        get_backend("cpu").compile_kernel(source, task.kernel_signature, tmp_path, tmp_path / "cache")
    assert "zero" in caught.value.log and "error" in caught.value.log


def test_kernel_with_a_wrong_signature_does_not_load(tmp_path):
    task = load_task(FIXTURES / "tasks" / "huge_relu.py", max_bytes=SMALL_BYTES)
    # An overload with another parameter list gets C++ linkage: no `kernel` symbol.
    source = "void kernel(const float* x, float* out, int n) { for (int i = 0; i < n; ++i) out[i] = x[i]; }\n"
    with pytest.raises(KernelBuildError):
        cpu = get_backend("cpu")
        artifact = cpu.compile_kernel(source, task.kernel_signature, tmp_path, tmp_path / "cache")
        import torch

        cpu.wrap_kernel(artifact, task.kernel_signature, torch.nn.Module())


@pytest.mark.parametrize(("l3_size", "flush_mib"), [("32768K", 64), ("491520K", 128), (None, 4)])
def test_the_cache_flush_writes_twice_the_last_level_cache_up_to_its_cap(tmp_path, l3_size, flush_mib):
    """A 2-core Xeon VM reported a 480 MiB L3: 960 MiB written before each timed call, 39 s of flushes per
    profile and the candidate's memory with them. The flush is now twice the cache up to 128 MiB."""
    from npu_pool.backends.cpu import flush_buffer_bytes

    for index, size in (("index0", "48K"), ("index2", "2048K"), ("index3", l3_size)):
        (tmp_path / index).mkdir()
        if size is not None:
            (tmp_path / index / "size").write_text(size + "\n")
    assert flush_buffer_bytes(tmp_path) == flush_mib * 2**20  # without an L3's size, twice the L2
