"""Kernel harness benchmark: where the time of one evaluation goes, per candidate and format.

    python bench/harness.py [--quick] [--trials N]
    python bench/harness.py --twin [--repeats N]    # the npu-twin case alone (Ascend C on the CPU twin)

The warm sandbox server is started first (once per device worker) and timed apart. For each
candidate, repeated: evaluations with an empty build cache (cold compile) and with the cache
filled, each verify + profile in one sandboxed child; medians, and per run the child start, compile,
correctness and profiling seconds, and the harness overhead beyond compile and kernel run
time. Without --quick it also times load_inline routes for a ModelNew candidate: no
precompiled header, torch's precompiled header (already built), and our content-addressed
cache hit. The CUDA case (a kernel-format LeakyReLU built by nvcc) runs where the cuda backend
is ready for the kernel format (a GPU and nvcc), else it is reported as skipped with the
reason; where nvcc alone is installed, the cold nvcc build of that kernel is still timed (for
sm_90 when no GPU says otherwise). Prints a human summary, then one JSON line last.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from npu_pool.backends import backend_ready, get_backend  # noqa: E402
from npu_pool.backends.cpu import flush_buffer_bytes  # noqa: E402
from npu_pool.config import HarnessConfig  # noqa: E402
from npu_pool.sandbox.confinement import network_namespace_available  # noqa: E402
from npu_pool.sandbox.runner import warm_server  # noqa: E402
from npu_pool.tasks.spec import load_task  # noqa: E402
from npu_pool.verdict import Candidate, detect_format  # noqa: E402
from npu_pool.verifier import evaluate  # noqa: E402

SUITE = ROOT / "suites" / "cpu" / "level1"
CANDIDATES = ROOT / "tests" / "npu_pool" / "candidates"
CASES = [  # (name, task, candidate)
    ("leaky_relu.kernel", SUITE / "9_LeakyReLU.py", CANDIDATES / "good_kernel" / "9_LeakyReLU.cpp"),
    ("softmax.kernel", SUITE / "18_Softmax.py", CANDIDATES / "good_kernel" / "18_Softmax.cpp"),
    ("leaky_relu.modelnew", SUITE / "9_LeakyReLU.py", CANDIDATES / "good_modelnew" / "9_LeakyReLU.py"),
]
CUDA_CASES = [  # run on the cuda backend
    ("leaky_relu.cuda_kernel", SUITE / "9_LeakyReLU.py", CANDIDATES / "cuda_kernel" / "9_LeakyReLU.cu"),
]


def one_evaluation(task, candidate, config, correctness_calls: int) -> dict:
    started = time.perf_counter()
    verdict, report = evaluate(task, candidate, config, profile=True)
    wall = time.perf_counter() - started
    t = verdict.timings
    row = {"feasible": verdict.feasible, "wall_s": wall, "process_start_s": t.get("process_start_s"),
           "compile_s": t.get("compile_s"), "compile_cached": t.get("compile_cached"),
           "correctness_s": t.get("correctness_s"), "profile_s": t.get("profile_s"),
           # the second, awkward size's trials (npu_pool.tasks.tail_sizes), inside correctness_s
           "second_size_s": t.get("second_size_s"), "second_size_share": _second_share(t),
           "correctness_cpu_s": t.get("correctness_cpu_s"), "profile_cpu_s": t.get("profile_cpu_s"),
           "load1": os.getloadavg()[0], **_verdict_fields(verdict)}
    if report is not None:
        calls = correctness_calls + config.warmup_trials + config.timed_trials
        kernel_s = calls * report.median_ms / 1e3
        reference_s = (correctness_calls + config.warmup_trials + config.timed_trials) * report.baseline_eager_ms / 1e3
        row.update(median_ms=report.median_ms, eager_ms=report.baseline_eager_ms, kernel_s=kernel_s,
                   reference_s=reference_s,
                   overhead_s=wall - (t.get("compile_s") or 0) - kernel_s - reference_s)
    return row


def _second_share(timings: dict) -> float | None:
    """The second size's trials as a fraction of the first size's (correctness_s holds both)."""
    second, both = timings.get("second_size_s"), timings.get("correctness_s")
    return second / (both - second) if second is not None and both and both > second else None


def _verdict_fields(verdict) -> dict:
    """Why an evaluation was not feasible (nothing when it was): its gate, category and reason."""
    if verdict.feasible:
        return {}
    return {"gate": verdict.gate, "category": verdict.category, "reason": verdict.reason}


def _s(value: float | None, digits: int = 2) -> str:
    """Seconds for a summary line; '-' where nothing was measured (an evaluation that stopped at a gate)."""
    return "-" if value is None else f"{value:.{digits}f}"


def not_feasible_note(rows: list[dict]) -> str:
    """'' when every evaluation was feasible, else how many were not and the first one's verdict."""
    failed = [r for r in rows if not r["feasible"]]
    if not failed:
        return ""
    first = failed[0]
    return (f"; NOT FEASIBLE in {len(failed)} of {len(rows)} evaluations, first: "
            f"{first.get('gate')}/{first.get('category')}: {first.get('reason')}")


def case_summary(name: str, case: dict) -> str:
    """One human line for a run_case result; a non-feasible case says its verdict and reason."""
    return (f"{name}: cold {_s(case['cold_median_s'])} s, cached {_s(case['cached_median_s'])} s (medians; "
            f"child start {_s(case['cached_process_start_s'], 3)} s, correctness {_s(case['cached_correctness_s'])} s "
            f"(of it the second size {_s(case.get('cached_second_size_s'), 3)} s, "
            f"{_s(case.get('second_size_share'))} of the first), "
            f"profile {_s(case['cached_profile_s'])} s (of it flushes about {_s(case['flushes_s'])} s), "
            f"overhead {_s(case['cached_overhead_s'])} s; CPU correctness {_s(case['cached_correctness_cpu_s'])} s, "
            f"profile {_s(case['cached_profile_cpu_s'])} s; load {_s(case['load1_median'], 1)})"
            + not_feasible_note(case["cold"] + case["cached"]))


def load_inline_routes(source_path: Path) -> dict:
    """Cold load_inline builds of one ModelNew source (made unique per route so every build
    is cold), each in a fresh process: torch's own precompiled header, none, ours (first
    with the header still to build, then with it built), and a hit in our build cache."""
    script = r"""
import sys, time, tempfile
from pathlib import Path
import torch.utils.cpp_extension as ce
from npu_pool import build_cache
route, src, cache = sys.argv[1], Path(sys.argv[2]).read_text(), Path(sys.argv[3])
src = src.replace("#include <torch/extension.h>", "#include <torch/extension.h>\n// route " + sys.argv[4], 1)
if route in ("own_pch", "cache_hit"):
    build_cache.install(cache, {"use_pch": True}, [])
else:
    original = ce.load_inline
    def plain(name, *a, **k):
        k["build_directory"] = tempfile.mkdtemp(); k["use_pch"] = route == "torch_pch"
        return original(name + "_" + route, *a, **k)
    ce.load_inline = plain
start = time.perf_counter()
exec(compile(src, "candidate.py", "exec"), {"__name__": "candidate"})
print(time.perf_counter() - start)
"""
    results = {}
    runs = [("torch_pch", "torch_pch", "a"), ("no_pch", "no_pch", "b"), ("own_pch_first", "own_pch", "c"),
            ("own_pch", "own_pch", "d"), ("cache_hit", "cache_hit", "d")]
    with tempfile.TemporaryDirectory() as cache:
        for label, route, variant in runs:
            out = subprocess.run([sys.executable, "-c", script, route, str(source_path), cache, variant],
                                 capture_output=True, text=True, cwd=ROOT)
            seconds = float(out.stdout.strip().splitlines()[-1]) if out.returncode == 0 else None
            results[f"{label}_s"] = seconds
            print(f"  load_inline {label:<14} {seconds if seconds is None else round(seconds, 2)} s", flush=True)
    return results


def run_case(name: str, task_path: Path, candidate_path: Path, args: argparse.Namespace, backend: str) -> dict:
    """Cold (empty build cache) and cached evaluations of one candidate; medians and rows."""
    source = candidate_path.read_text()
    candidate = Candidate(source=source, format=detect_format(source))
    task = load_task(task_path)
    # A kernel-format cold build is g++ or nvcc (seconds); a ModelNew one is load_inline (about a minute): once.
    cold_repeats = args.repeats if candidate.format == "kernel" else 1
    colds, cacheds = [], []
    for repeat in range(max(cold_repeats, args.repeats)):
        with tempfile.TemporaryDirectory() as cache:
            config = HarnessConfig(backend=backend, build_cache_dir=cache, timed_trials=args.trials, warmup_trials=3,
                                   compile_baseline=False)
            calls = config.correctness_trials + 1
            if repeat < cold_repeats:
                colds.append(one_evaluation(task, candidate, config, calls))
            else:
                one_evaluation(task, candidate, config, calls)  # fills this cache
            cacheds.append(one_evaluation(task, candidate, config, calls))
    case = {
        "backend": backend, "sizes": task.sizes, "cold_median_s": _median(colds, "wall_s"),
        # two cache flushes per timed trial (candidate and reference), at the cost timed in this process
        "flushes_s": 2 * args.trials * args.flush_ms / 1e3 if backend == "cpu" and args.flush_ms else None,
        "cached_median_s": _median(cacheds, "wall_s"),
        "cached_process_start_s": _median(cacheds, "process_start_s"),
        "cached_correctness_s": _median(cacheds, "correctness_s"), "cached_profile_s": _median(cacheds, "profile_s"),
        "cached_second_size_s": _median(cacheds, "second_size_s"), "second_size_share": _median(cacheds, "second_size_share"),
        "cached_overhead_s": _median(cacheds, "overhead_s"),
        # CPU seconds of the child's checking and timing: what wall time would be on an idle machine
        "cached_correctness_cpu_s": _median(cacheds, "correctness_cpu_s"),
        "cached_profile_cpu_s": _median(cacheds, "profile_cpu_s"), "load1_median": _median(cacheds + colds, "load1"),
        "all_feasible": all(r["feasible"] for r in colds + cacheds), "repeats": len(cacheds), "cold": colds,
        "cached": cacheds}
    print(case_summary(name, case), flush=True)
    return case


def nvcc_build(task_path: Path, candidate_path: Path) -> dict:
    """One cold nvcc build of a CUDA kernel-format candidate, in this process (no sandbox),
    where nvcc is installed: for the GPU's capability, or sm_90 without a GPU."""
    from npu_pool.backends import cuda_kernel
    from npu_pool.backends.cuda import find_nvcc

    nvcc = find_nvcc()
    if nvcc is None:
        print("nvcc build: skipped (nvcc not found)", flush=True)
        return {"skipped": "nvcc not found"}
    import torch

    capability = torch.cuda.get_device_capability(0) if torch.cuda.is_available() else (9, 0)
    signature = load_task(task_path).kernel_signature
    with tempfile.TemporaryDirectory() as work:
        started = time.perf_counter()
        cuda_kernel.build_kernel(candidate_path.read_text(), signature, nvcc, capability, Path(work), Path(work) / "cache")
        seconds = time.perf_counter() - started
    arch = f"sm_{capability[0]}{capability[1]}"
    print(f"nvcc build ({arch}, {cuda_kernel.nvcc_version(nvcc)}): {seconds:.2f} s cold", flush=True)
    return {"arch": arch, "nvcc": cuda_kernel.nvcc_version(nvcc), "cold_s": seconds}


TWIN_CASE = (SUITE / "4_ReLU.py", CANDIDATES / "npu_twin" / "relu_good.cpp")
TWIN_MAX_BYTES = 2**20  # 128x1024 floats in and out: an Ascend C kernel checked in the CPU twin


def twin_case(repeats: int) -> dict:
    """The npu-twin backend's compile + verify (anti-hack, g++ against the twin, every
    correctness trial, in the sandbox), cold (an empty build cache) and cached: wall seconds,
    and the g++ build alone in this process with its CPU seconds (what an idle machine takes)."""
    from npu_pool.backends.ascendc_twin.build import twin_headers_digest

    task = load_task(TWIN_CASE[0], max_bytes=TWIN_MAX_BYTES)
    candidate = Candidate(source=TWIN_CASE[1].read_text(), format="kernel")
    backend = get_backend("npu-twin")
    warm_server("npu-twin", backend.sandbox_env_allow, network_namespace_available()).start()
    colds, cacheds, builds = [], [], []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as cache:
            config = HarnessConfig(backend="npu-twin", build_cache_dir=cache, fit_max_bytes=TWIN_MAX_BYTES)
            for rows in (colds, cacheds):
                started = time.perf_counter()
                verdict, _ = evaluate(task, candidate, config, profile=False)
                rows.append({"feasible": verdict.feasible, **_verdict_fields(verdict), "wall_s": time.perf_counter() - started,
                             "compile_s": verdict.timings.get("compile_s"),
                             "correctness_s": verdict.timings.get("correctness_s"),
                             "correctness_cpu_s": verdict.timings.get("correctness_cpu_s"),
                             "second_size_s": verdict.timings.get("second_size_s"),
                             "sandbox_wall_s": verdict.timings.get("sandbox_wall_s"), "load1": os.getloadavg()[0]})
        with tempfile.TemporaryDirectory() as work:
            before, started = os.times(), time.perf_counter()
            backend.compile_kernel(candidate.source, task.kernel_signature, Path(work), Path(work) / "cache")
            after = os.times()
            builds.append({"wall_s": time.perf_counter() - started,
                           "cpu_s": after.children_user + after.children_system - before.children_user - before.children_system})
    case = {"backend": "npu-twin", "sizes": task.sizes, "twin_headers": twin_headers_digest(),
            "cold_median_s": _median(colds, "wall_s"), "cached_median_s": _median(cacheds, "wall_s"),
            "cold_compile_s": _median(colds, "compile_s"), "cached_correctness_s": _median(cacheds, "correctness_s"),
            "cached_correctness_cpu_s": _median(cacheds, "correctness_cpu_s"),
            "cached_second_size_s": _median(cacheds, "second_size_s"),
            "gxx_build_wall_s": _median(builds, "wall_s"), "gxx_build_cpu_s": _median(builds, "cpu_s"),
            "all_feasible": all(r["feasible"] for r in colds + cacheds), "load1_median": _median(colds + cacheds, "load1"),
            "targets_s": {"cold": 2.0, "cached": 1.0}, "repeats": repeats, "cold": colds, "cached": cacheds}
    print(f"npu-twin relu.kernel: cold {_s(case['cold_median_s'])} s, cached {_s(case['cached_median_s'])} s "
          f"(targets 2 s / 1 s; g++ build {_s(case['gxx_build_wall_s'])} s wall, {_s(case['gxx_build_cpu_s'])} s CPU; "
          f"cached correctness {_s(case['cached_correctness_cpu_s'])} CPU s, of it the second size "
          f"{_s(case['cached_second_size_s'], 3)} s; load {_s(case['load1_median'], 1)})"
          + not_feasible_note(colds + cacheds), flush=True)
    return case


def flush_cost_ms(backend: str, times: int = 20) -> float | None:
    """Median wall milliseconds of one of the backend's cache flushes between timed calls (CPU:
    a write of twice the last-level cache), timed here; None where the backend cannot start."""
    try:
        flusher = get_backend(backend)
        flusher.flush_cache()  # allocates its buffer
        samples = []
        for _ in range(times):
            started = time.perf_counter()
            flusher.flush_cache()
            samples.append((time.perf_counter() - started) * 1e3)
        return statistics.median(samples)
    except Exception:  # noqa: BLE001 - only a figure for the summary
        return None


def _median(rows: list[dict], key: str) -> float | None:
    values = [r[key] for r in rows if r.get(key) is not None]
    return statistics.median(values) if values else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="skip the load_inline route comparison")
    parser.add_argument("--trials", type=int, default=20, help="timed trials per profile")
    parser.add_argument("--repeats", type=int, default=5, help="evaluations per case and state (medians reported)")
    parser.add_argument("--twin", action="store_true", help="only the npu-twin case: Ascend C compile + verify, cold and cached")
    args = parser.parse_args()
    args.flush_ms = None
    if args.twin:
        print(json.dumps({"bench": "harness", "cases": {"relu.npu_twin": twin_case(args.repeats)}}))
        return 0
    results: dict = {"bench": "harness", "cases": {}}
    started = time.perf_counter()
    warm_server("cpu", get_backend("cpu").sandbox_env_allow, network_namespace_available()).start()
    results["warm_server_start_s"] = time.perf_counter() - started  # once per device worker, not per candidate
    args.flush_ms = results["cpu_flush_ms"] = flush_cost_ms("cpu")
    print(f"cpu cache flush: {args.flush_ms or 0:.1f} ms each (a write of {flush_buffer_bytes() >> 20} MiB, "
          f"twice the last-level cache, at most 128 MiB), {2 * args.trials} per profile", flush=True)
    for name, task_path, candidate_path in CASES:
        results["cases"][name] = run_case(name, task_path, candidate_path, args, "cpu")
    ready, why = backend_ready("cuda", "kernel")
    for name, task_path, candidate_path in CUDA_CASES:
        if not ready:
            print(f"{name}: skipped ({why})", flush=True)
            results["cases"][name] = {"skipped": why}
            continue
        started = time.perf_counter()
        warm_server("cuda", get_backend("cuda").sandbox_env_allow, network_namespace_available()).start()
        results["cuda_warm_server_start_s"] = time.perf_counter() - started
        results["cases"][name] = run_case(name, task_path, candidate_path, args, "cuda")
    results["nvcc_build"] = nvcc_build(CUDA_CASES[0][1], CUDA_CASES[0][2])  # after the sandboxed runs
    if not args.quick:
        results["load_inline"] = load_inline_routes(CANDIDATES / "good_modelnew" / "9_LeakyReLU.py")
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
