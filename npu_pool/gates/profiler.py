"""The profiler: latency of a candidate against the reference, eager and under torch.compile.

`measure` runs inside the sandboxed worker: warm-up, then interleaved timed trials of the
candidate and the eager reference, each after a cache flush, rotating through several
input sets, timed by the backend's timer (device events, or the monotonic clock on the
CPU). Outputs of some timed calls are compared with the reference, and an implausibly fast
candidate is re-verified after timing (npu_pool.gates.timed_check). The torch.compile baseline
is slow to build, so it is measured once per task, sizes and device and cached. The entry
from outside the sandbox is npu_pool.verifier.evaluate(..., profile=True): checks and timing
in one sandboxed worker.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from npu_pool import harness_cache
from npu_pool.backends.base import Backend
from npu_pool.gates.infra_faults import fault_of, is_fault_text
from npu_pool.gates.roofline import analyse, device_peaks
from npu_pool.gates.timed_check import TimedCheck, beyond_peaks, reference_outputs, reverify, spoil
from npu_pool.verdict import ProfileReport, StageProfile

if TYPE_CHECKING:
    from npu_pool.config import HarnessConfig
    from npu_pool.tasks.spec import TaskSpec


def time_once(backend: Backend, fn: Callable[..., Any], args: list[Any]) -> float:
    return _time_call(backend, fn, args)[0]


def _time_call(backend: Backend, fn: Callable[..., Any], args: list[Any]) -> tuple[float, Any]:
    """The call's time, and its outputs, kept until the timer has stopped (then checked)."""
    timer = backend.timer()
    backend.synchronize()
    timer.start()
    out = fn(*args)
    timer.stop()
    return timer.elapsed_ms(), out


def _tensors_of(module: torch.nn.Module) -> list[torch.Tensor]:
    """Parameters, buffers and plain tensor attributes: memory a reference may return a view of."""
    found = [*module.parameters(), *module.buffers()]
    for sub in module.modules():
        found += [v for v in vars(sub).values() if isinstance(v, torch.Tensor)]
    return found


# Timed calls of a backend whose timer reports a modelled cost (the Ascend C twin): the cost is
# computed from counted work, so 50 calls repeat one figure, while a scalar kernel run by the twin
# at a task's sizes takes seconds a call (a correct ReLU copied from the first rung timed out at
# 50). Three keep the timed-output checks' random picks (timed_check.py) meaningful.
MODELLED_TIMED_CALLS = 3

def stats(samples: list[float]) -> tuple[float, float]:
    """(median, interquartile range)."""
    if len(samples) < 4:
        return statistics.median(samples), 0.0
    q = statistics.quantiles(samples, n=4)
    return statistics.median(samples), q[2] - q[0]


# torch.compile builds C++ (g++ on the CPU, Triton on CUDA): it must run before the seal, after
# which the sandbox executes no program. prepare_compile_baseline builds it there; the profiler
# times what it built. Keyed like the cache.
_prepared: dict[str, Any] = {}


def baseline_key(backend: Backend, spec: TaskSpec, config: HarnessConfig) -> str:
    return f"{backend.name}:{backend.device}:{spec.source_hash}:{config.timed_trials}"


def _input_sets(task_module: Any, device: Any, config: HarnessConfig) -> list[list[Any]]:
    sets = []
    for k in range(config.profile_input_sets):
        torch.manual_seed(config.seed + 1000 + k)
        sets.append([x.to(device) if isinstance(x, torch.Tensor) else x for x in task_module.get_inputs()])
    return sets


def compile_baseline_wanted(backend: Backend, spec: TaskSpec, config: HarnessConfig, cache_dir: Path) -> bool:
    """Whether this run must build the torch.compile baseline (profiling, enabled, measured
    timing, not cached yet)."""
    if not config.compile_baseline or backend.timing_kind == "modelled":
        return False
    cached = harness_cache.load(cache_dir / "compile_baselines.json").get(baseline_key(backend, spec, config))
    return cached is None or is_fault_text(cached.get("error"))


def prepare_compile_baseline(task_module: Any, spec: TaskSpec, backend: Backend, config: HarnessConfig) -> None:
    """Build the reference under torch.compile (its first call compiles), before the seal; the
    profiler times it later. A failure is kept and reported there."""
    key = baseline_key(backend, spec, config)
    try:
        torch.manual_seed(config.seed)
        compiled = torch.compile(task_module.Model(*task_module.get_init_inputs()).to(backend.device).eval())
        with torch.no_grad():
            compiled(*_input_sets(task_module, backend.device, config)[0])
        backend.synchronize()
        _prepared[key] = compiled
    except Exception as exc:
        _prepared[key] = exc


def _compile_baseline(task_module: Any, backend: Backend, config: HarnessConfig, input_sets: list[list[Any]],
                      cache_path: Path, cache_key: str) -> tuple[float | None, str | None]:
    cached = harness_cache.load(cache_path).get(cache_key)
    if cached is not None and not is_fault_text(cached.get("error")):  # older runs cached sandbox refusals
        return cached.get("ms"), cached.get("error")
    # Recorded first: if this worker is killed while compiling, later ones do not retry.
    _store(cache_path, cache_key, None, "torch.compile did not finish within the run limit")
    ms, error, fault = None, None, None
    prepared = _prepared.pop(cache_key, None)
    try:
        if isinstance(prepared, Exception):
            raise prepared
        torch.manual_seed(config.seed)
        compiled = prepared if prepared is not None else torch.compile(task_module.Model(*task_module.get_init_inputs()).to(backend.device).eval())
        with torch.no_grad():
            for i in range(max(config.warmup_trials, 1)):
                compiled(*input_sets[i % len(input_sets)])
            samples = []
            for i in range(config.timed_trials):
                backend.flush_cache()
                samples.append(time_once(backend, compiled, input_sets[i % len(input_sets)]))
        ms = stats(samples)[0]
    except Exception as exc:  # no compiler, unsupported op, backend without inductor
        error = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"[:300]
        fault = fault_of(exc)
    if fault is not None:  # the sandbox's or the machine's doing, not torch.compile's: said here, never cached
        harness_cache.forget(cache_path, cache_key)
        cause = "" if fault[:80] in error else f": {fault}"
        return None, f"{error} [an environment fault, not cached{cause}]"[:400]
    _store(cache_path, cache_key, ms, error)
    return ms, error


def _store(cache_path: Path, key: str, ms: float | None, error: str | None) -> None:
    harness_cache.record(cache_path, key, {"ms": ms, "error": error})


def measure(
    task_module: Any,
    spec: TaskSpec,
    make_candidate: Callable[[torch.nn.Module, int], torch.nn.Module],
    backend: Backend,
    config: HarnessConfig,
    cache_dir: Path,
    on_stage: Callable[[str], None] = lambda _: None,
    on_partial: Callable[[ProfileReport], None] = lambda _: None,
) -> ProfileReport:
    """Time a (verified) candidate and the reference baselines on this backend."""
    device = backend.device
    input_sets = _input_sets(task_module, device, config)
    torch.manual_seed(config.seed)
    reference = task_module.Model(*task_module.get_init_inputs()).to(device).eval()
    candidate = make_candidate(reference, config.seed)
    if hasattr(candidate, "poison_outputs"):
        candidate.poison_outputs = False  # the kernel format's wrapper: time it without the NaN fill
    # Timed outputs are checked (npu_pool.gates.timed_check): expected outputs per input set, up front.
    warmup_calls, timed_calls = config.warmup_trials, config.timed_trials
    if backend.timing_kind == "modelled":  # a computed cost repeats exactly: a few calls say all it can
        warmup_calls, timed_calls = min(warmup_calls, 1), min(timed_calls, MODELLED_TIMED_CALLS)
    checker = TimedCheck(reference_outputs(reference, input_sets), warmup_calls, timed_calls, config.atol, config.rtol)
    keep = [x for s in input_sets for x in s if isinstance(x, torch.Tensor)] + _tensors_of(reference)
    on_stage("profile: warm-up")
    with torch.no_grad():
        for i in range(warmup_calls):
            k = i % len(input_sets)
            out = candidate(*input_sets[k])
            if checker.wants("warm-up", i):
                backend.synchronize()
                checker.check("warm-up", i, k, out)
            del out
            spoil(reference(*input_sets[k]), keep)
        backend.synchronize()
        on_stage("profile: timed trials")
        cand_ms, eager_ms = [], []
        for i in range(timed_calls):
            k = i % len(input_sets)
            backend.flush_cache()
            ms, out = _time_call(backend, candidate, input_sets[k])
            cand_ms.append(ms)
            if checker.wants("timed", i):
                checker.check("timed", i, k, out)
            del out
            backend.flush_cache()
            ms, out = _time_call(backend, reference, input_sets[k])
            eager_ms.append(ms)
            spoil(out, keep)
            del out
    median, iqr = stats(cand_ms)
    eager = stats(eager_ms)[0]
    on_stage("profile: roofline")
    peaks = device_peaks(backend)
    out_elements = sum(int(torch.Size(o.shape).numel()) for o in spec.outputs)
    gbps, gflops, bound, hints = analyse(spec.flops, spec.tensor_bytes, out_elements, median, peaks)
    modelled = backend.timing_kind == "modelled"
    if modelled:  # the Ascend C twin: a cost computed from counted work, on a modelled SoC
        hints = [h.replace("measured peak", "modelled peak") for h in hints]
        hints.insert(0, "timing modelled by the Ascend C twin from counted work (not measured on an NPU); "
                        "eager PyTorch modelled as one kernel per operator on the same SoC")
    if not checker.active:
        hints.append("timed outputs not checked: the reference changes its inputs")
    implausible = beyond_peaks(gbps, gflops, peaks, config.peak_margin)
    if implausible:  # after every timed call: correct now, or changed under timing
        on_stage("profile: re-verify")
        reverify(task_module, make_candidate, device, config, implausible, on_stage)
        hints.append(f"re-verified after timing ({implausible}): outputs still match")
    speedup = eager / median if median > 0 else float("inf")
    flags = []
    if speedup > config.speedup_bound:
        flags.append("excessive_speedup")
        hints.append(f"speedup {speedup:.1f}x exceeds the sanity bound {config.speedup_bound:g}x: flagged for review")
    report = ProfileReport(
        median_ms=median, iqr_ms=iqr, trials=len(cand_ms), baseline_eager_ms=eager,
        baseline_compile_error="disabled (harness.compile_baseline = false)", speedup_vs_eager=speedup,
        achieved_gbps=gbps, achieved_gflops=gflops, bound=bound, hints=hints, flags=flags, sizes=spec.sizes,
        timing=backend.timing_kind,
    )
    if modelled:  # torch.compile has no modelled cost: its generated code does not run on the twin
        return report.model_copy(update={
            "baseline_compile_error": "timings are modelled: torch.compile's code does not run on the Ascend C twin",
            "stages": StageProfile.from_twin(getattr(backend, "last_profile", {}))})  # the last timed launch's
    if not config.compile_baseline:
        return report
    # Kept if the worker is killed while torch.compile builds: the verdict survives.
    on_partial(report.model_copy(update={"baseline_compile_error": "torch.compile did not finish within the run limit"}))
    on_stage("profile: torch.compile baseline")
    key = baseline_key(backend, spec, config)
    compile_ms, compile_error = _compile_baseline(task_module, backend, config, input_sets,
                                                  cache_dir / "compile_baselines.json", key)
    return report.model_copy(update={
        "baseline_compile_ms": compile_ms, "baseline_compile_error": compile_error if compile_ms is None else None,
        "speedup_vs_compile": (compile_ms / median) if compile_ms and median > 0 else None})
