"""CUDA kernel-format candidates (tests/npu_pool/candidates/cuda_kernel/): an honest kernel and
known hacks through the static gate (here, on any machine) and, on a GPU (`-m gpu`; skipped
without one), through `evokernel verify` and `profile` and the verifier: each stops at the gate
its header names. Written on a machine without a GPU: the GPU part has not run yet. The bundle's
family examples on a GPU are tests/memory_actor/test_family_examples.py's."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest
import torch

from npu_pool.antihack import check_kernel_source
from npu_pool.backends import cuda_kernel
from npu_pool.paths import cache_root
from npu_pool.tasks.spec import load_task
from npu_pool.verdict import Candidate

from ..harness_support import SMALL_BYTES, SUITE, harness_config, header

CANDIDATES = sorted((Path(__file__).resolve().parents[1] / "candidates" / "cuda_kernel").glob("*.cu"))
ROOT = Path(__file__).resolve().parents[3]
gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def _ids(paths):
    return [p.name for p in paths]


@pytest.mark.parametrize("path", CANDIDATES, ids=_ids(CANDIDATES))
def test_static_gate_rejects_exactly_the_hacks_it_can_see(path):
    rejected = [f.rule for f in check_kernel_source(path.read_text(), "cuda") if f.severity == "reject"]
    if header(path, "expect-gate") == "hack":
        assert rejected, f"{path.name}: the static gate let it through"
    else:
        assert rejected == [], f"{path.name}: {rejected}"


@pytest.mark.parametrize("path", CANDIDATES, ids=_ids(CANDIDATES))
def test_candidates_are_written_for_their_tasks_cuda_signature(path):
    task = load_task(SUITE / header(path, "task"), max_bytes=SMALL_BYTES)
    declared = cuda_kernel.cuda_signature(task.kernel_signature).declaration(extra=[cuda_kernel.STREAM_PARAM])
    entry = re.search(r'extern\s+"C"\s+void\s+kernel\s*\(([^)]*)\)', path.read_text()).group(1)
    assert " ".join(entry.split()) == declared[declared.index("(") + 1:declared.rindex(")")]


@pytest.mark.parametrize("path", [p for p in CANDIDATES if header(p, "expect-gate") != "hack"],
                         ids=_ids(p for p in CANDIDATES if header(p, "expect-gate") != "hack"))
def test_candidates_past_the_static_gate_build_with_the_real_nvcc(path, tmp_path):
    from npu_pool.backends.cuda import find_nvcc

    nvcc = find_nvcc()
    if nvcc is None or cuda_kernel.nvcc_version(nvcc) == "unknown":
        pytest.skip("nvcc (the CUDA toolkit) is not installed")
    task = load_task(SUITE / header(path, "task"), max_bytes=SMALL_BYTES)
    artifact = cuda_kernel.build_kernel(path.read_text(), task.kernel_signature, nvcc, (9, 0), tmp_path,
                                        cache_root() / "test-build" / "cuda-kernels")
    assert artifact.stat().st_size > 0


# --- on a GPU ----------------------------------------------------------------------------------------


def _config(**overrides):
    return harness_config(backend="cuda", run_timeout_s=300.0, memory_limit_mb=8192, **overrides)  # the default cap


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("path", CANDIDATES, ids=_ids(CANDIDATES))
def test_each_candidate_stops_at_its_gate_on_a_gpu(path):
    from npu_pool.verifier import verify

    task = load_task(SUITE / header(path, "task"), max_bytes=SMALL_BYTES)
    verdict = verify(task, Candidate(source=path.read_text(), format="kernel"), _config())
    expected = header(path, "expect-gate")
    assert verdict.gate == expected, verdict.model_dump_json(indent=1)
    assert verdict.feasible == (expected == "ok")
    print(f"{path.name}: {verdict.gate}/{verdict.category} {verdict.reason[:120]} timings={verdict.timings}")


@gpu
@pytest.mark.gpu
def test_honest_kernel_profiles_with_no_lingering_work_and_a_cached_rebuild():
    from npu_pool.verifier import evaluate

    path = next(p for p in CANDIDATES if p.name == "4_ReLU.cu")
    task = load_task(SUITE / header(path, "task"), max_bytes=SMALL_BYTES)
    candidate = Candidate(source=path.read_text(), format="kernel")
    verdict, report = evaluate(task, candidate, _config(), profile=True)
    assert verdict.feasible and report is not None, verdict.model_dump_json(indent=1)
    assert not any("lingering" in f or "untimed" in f for f in verdict.flags)
    # A real measurement in milliseconds, checked without a time bound: every timed trial counted,
    # a positive median the speedup is computed from, and no faster than the device's peaks allow
    # (a unit slip, or work the clock missed, shows as a re-verification or an excessive speedup).
    assert report.timing == "measured" and report.trials == _config().timed_trials and report.median_ms > 0
    assert report.speedup_vs_eager == pytest.approx(report.baseline_eager_ms / report.median_ms)
    assert "excessive_speedup" not in report.flags and not any(h.startswith("re-verified") for h in report.hints)
    again, _ = evaluate(task, candidate, _config(), profile=False)
    assert again.feasible and again.timings.get("compile_cached") == 1.0
    print(f"cold: {verdict.timings}\ncached: {again.timings}\nmedian {report.median_ms:.4f} ms, eager {report.baseline_eager_ms:.4f} ms")


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("name,code", [("4_ReLU.cu", 0), ("zeros.cu", 1), ("side_stream.cu", 1)])
def test_evokernel_verify_and_profile_exit_codes(name, code, capsys, monkeypatch):
    from launch.cli import main

    monkeypatch.setenv("EVOKERNEL_HARNESS__FIT_MAX_BYTES", str(SMALL_BYTES))
    monkeypatch.setenv("EVOKERNEL_HARNESS__TIMED_TRIALS", "5")
    monkeypatch.setenv("EVOKERNEL_HARNESS__COMPILE_BASELINE", "false")
    monkeypatch.setenv("EVOKERNEL_HARNESS__BUILD_CACHE_DIR", str(cache_root() / "test-build"))
    path = next(p for p in CANDIDATES if p.name == name)
    task = str(SUITE / header(path, "task"))
    for command in ("verify", "profile"):
        assert main([command, task, str(path), "--backend", "cuda", "--format", "kernel", "--json"]) == code
        line = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
        assert line, command


@gpu
@pytest.mark.gpu
def test_the_prompts_worked_example_is_feasible(tmp_path):
    from npu_pool.verifier import verify

    task_file = tmp_path / "0_ScaledAdd.py"
    task_file.write_text(textwrap.dedent("""\
        import torch
        import torch.nn as nn


        class Model(nn.Module):
            def __init__(self, alpha: float):
                super().__init__()
                self.alpha = alpha

            def forward(self, x, y):
                return x * self.alpha + y


        batch_size = 64
        dim = 1024


        def get_inputs():
            return [torch.randn(batch_size, dim), torch.randn(batch_size, dim)]


        def get_init_inputs():
            return [0.5]
        """))
    example = (ROOT / "actors" / "prompts" / "example_kernel_cuda.md").read_text()
    answer = re.search(r"=== assistant ===\s*```cpp\n(.*?)\n```", example, re.DOTALL).group(1)
    verdict = verify(load_task(task_file, max_bytes=SMALL_BYTES), Candidate(source=answer, format="kernel"), _config())
    assert verdict.feasible, verdict.model_dump_json(indent=1)
