"""Timed outputs are checked: what the profiler's timed calls return must still match the reference.

A candidate can count its calls and stop computing once the correctness trials are over;
the profiler would then time an empty call and report an impossible speedup. So, inside
the sandboxed worker, `npu_pool.gates.profiler.measure` compares the outputs of some of its calls
with the reference's outputs for the same input set (computed once, up front, cloned): the
last warm-up call, the last timed call and a few timed calls drawn by a generator seeded
from os.urandom (the candidate cannot tell from its call count which calls are looked at).
The comparison runs after the timer has stopped, on the candidate's device, with the
correctness gate's tolerances. The reference's own timed outputs are overwritten with NaN
once the timer has stopped, so an unwritten candidate output cannot inherit them from the
allocator. A candidate whose timing implies more than `peak_margin` times the measured
peak bandwidth or FLOP rate is re-verified on fresh inputs after all the timed calls.
Either failure raises `ChangedUnderTiming`, which the worker reports as an infeasible
verdict (gate `correctness`, category `changed_under_timing`).

On accelerators, `untimed_work` then times a few more calls and asks how long the device
stays busy after each timed region's end event has completed (`Timer.lingering_ms`): work a
candidate leaves running on another stream is invisible to the current stream's events, so
a candidate whose calls leave the device busy well beyond what the reference's calls do is
infeasible (gate `hack`, category `untimed_work`). The static `stream` rule still stands.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable
from typing import Any

import torch

from npu_pool.backends.base import DevicePeaks
from npu_pool.gates import correctness
from npu_pool.protocol import WorkerOutcome
from npu_pool.tasks.sizing import as_output_list

CATEGORY = "changed_under_timing"
UNTIMED_CATEGORY = "untimed_work"
LINGER_MIN_MS = 0.05  # below this, lingering is the host's own wait latency, not work
STREAM_AUDIT_CALLS = 5
REVERIFY_SEED_OFFSET = 2000  # the gate uses seed + trial, the timed input sets seed + 1000 + k


class ChangedUnderTiming(Exception):
    """The candidate's outputs changed while it was timed; `outcome` is the infeasible verdict."""

    def __init__(self, outcome: WorkerOutcome):
        super().__init__(outcome.reason)
        self.outcome = outcome


def _changed(reason: str, details: str) -> ChangedUnderTiming:
    return ChangedUnderTiming(WorkerOutcome(feasible=False, gate="correctness", category=CATEGORY,
                                            reason=f"outputs changed under timing: {reason}"[:300], details=details))


def reference_outputs(reference: torch.nn.Module, input_sets: list[list[Any]]) -> list[list[torch.Tensor]] | None:
    """The reference's outputs for each input set (run on clones, kept as clones); None when
    the reference changes its inputs, so that no fixed expected output exists."""
    expected = []
    with torch.no_grad():
        for inputs in input_sets:
            with correctness.own_threads():
                clones = [x.detach().clone() if isinstance(x, torch.Tensor) else x for x in inputs]
            outputs = as_output_list(reference(*clones))
            with correctness.own_threads():
                if not all(correctness.same_values(a, b) or correctness.same_values(torch.nan_to_num(a), torch.nan_to_num(b))
                           for a, b in zip(inputs, clones, strict=True) if isinstance(a, torch.Tensor)):
                    return None
                # Clones only of outputs that share memory with the reference's parameters or its
                # input clones; the others are already copies of their own, held here alone.
                shared = [t for t in [*clones, *reference.parameters(), *reference.buffers()]
                          if isinstance(t, torch.Tensor) and t.numel()]
                expected.append([o.detach().clone() if o.numel() and any(correctness._overlaps(o, t) for t in shared)
                                 else o.detach() for o in outputs])
    return expected


def output_problem(raw: Any, expected: list[torch.Tensor], atol: float | None, rtol: float | None) -> str | None:
    """None when `raw` (one call's return value) matches `expected`, else what differs."""
    produced = list(raw) if isinstance(raw, list | tuple) else [raw]
    if len(produced) != len(expected):
        return f"returned {len(produced)} outputs, expected {len(expected)}"
    for i, (out, ref) in enumerate(zip(produced, expected, strict=True)):
        if type(out) is not torch.Tensor:
            return f"output {i} is a {type(out).__name__}, not a plain torch.Tensor"
        if out.device != ref.device:  # never compare across devices
            return f"output {i} is on {out.device}, expected {ref.device}"
        if out.shape != ref.shape or out.dtype != ref.dtype:
            return f"output {i} is {out.dtype} {list(out.shape)}, expected {ref.dtype} {list(ref.shape)}"
        a, r = correctness.tolerances(ref.dtype, atol, rtol)
        mismatch = correctness.compare(ref, out, a, r, finite_only=False)
        if mismatch is not None:
            return f"output {i} differs from the reference: {mismatch}"
    return None


class TimedCheck:
    """Which calls of the profiler are compared with the reference, and the comparison."""

    def __init__(self, expected: list[list[torch.Tensor]] | None, warmup_calls: int, timed_calls: int,
                 atol: float | None, rtol: float | None, rng: random.Random | None = None):
        self.expected, self.atol, self.rtol = expected, atol, rtol
        self.warmup_calls, self.timed_calls = warmup_calls, timed_calls
        # Not the seeded torch generator: nothing the candidate can read or replay.
        rng = rng or random.Random(int.from_bytes(os.urandom(16), "little"))
        extra = min(timed_calls - 1, max(3, timed_calls // 10))
        self.timed = {timed_calls - 1, *rng.sample(range(timed_calls - 1), extra)} if timed_calls else set()
        self.checked: list[str] = []

    @property
    def active(self) -> bool:
        return self.expected is not None

    def wants(self, phase: str, index: int) -> bool:
        if not self.active:
            return False
        return index in self.timed if phase == "timed" else index == self.warmup_calls - 1

    def check(self, phase: str, index: int, set_index: int, raw: Any) -> None:
        """Compare one call's outputs (call it after the timer has stopped); raise on a mismatch."""
        assert self.expected is not None
        total = self.timed_calls if phase == "timed" else self.warmup_calls
        label = f"{phase} call {index + 1} of {total} (input set {set_index + 1})"
        self.checked.append(f"{phase} {index + 1}")
        with correctness.own_threads():
            problem = output_problem(raw, self.expected[set_index], self.atol, self.rtol)
        if problem is not None:
            raise _changed(f"{label}: {problem.splitlines()[0]}",
                           f"{label}: {problem}\nchecked calls: {', '.join(self.checked)}; the candidate passed the "
                           "correctness trials, so it computes differently while it is timed")


def spoil(raw: Any, keep: list[torch.Tensor]) -> None:
    """Overwrite the reference's floating outputs with NaN (after its timer stopped), unless they
    share memory with `keep` (inputs, parameters: a reference may return a view of those)."""
    with correctness.own_threads():
        for out in as_output_list(raw):
            if out.dtype.is_floating_point and out.numel() and not any(
                    t.numel() and correctness._overlaps(out, t) for t in keep):
                out.detach().fill_(float("nan"))


def beyond_peaks(gbps: float, gflops: float, peaks: DevicePeaks, margin: float) -> str | None:
    """What of the timing exceeds `margin` times the measured peaks, or None."""
    over = []
    if gbps > margin * peaks.gbps:
        over.append(f"{gbps:.1f} GB/s against a measured peak of {peaks.gbps:.1f} GB/s")
    if gflops > margin * peaks.gflops:
        over.append(f"{gflops:.1f} GFLOP/s against a measured peak of {peaks.gflops:.1f} GFLOP/s")
    return "; ".join(over) or None


def reverify(task_module: Any, make_candidate: Callable[[torch.nn.Module, int], torch.nn.Module], device: str,
             config: Any, why: str, on_stage: Callable[[str], None] = lambda _: None) -> None:
    """The full correctness check again, on fresh seeded inputs, after the timed calls; raise on a failure."""
    outcome = correctness.check(
        task_module, make_candidate, device, config.correctness_trials, config.seed + REVERIFY_SEED_OFFSET,
        config.atol, config.rtol, config.perturbed_trial, on_trial=lambda label: on_stage(f"profile: re-verify, {label}"),
        clock=correctness.CallClock(config.call_time_limit_factor, config.call_time_limit_min_s))
    if outcome.feasible:
        return
    details = (f"re-verified after timing because the timing implies {why} (margin {config.peak_margin:g}x)\n"
               f"{outcome.details}")
    if outcome.gate != "correctness":  # it raised or ran out of memory: keep what happened
        raise ChangedUnderTiming(outcome.model_copy(update={"reason": f"after timing, {outcome.reason}"[:300],
                                                            "details": details}))
    raise _changed(f"re-verified after an implausible timing, {outcome.reason} [{outcome.category}]", details)


def lingering_problem(candidate: list[tuple[float, float]], reference: list[tuple[float, float]]) -> str | None:
    """From (event ms, lingering ms) pairs of candidate and reference calls: what is wrong when
    the candidate's calls leave the device busy after their timed region (median over calls,
    beyond max(LINGER_MIN_MS, 3 x the reference's own median lingering)), else None."""
    import statistics

    c_ms = statistics.median(ms for ms, _ in candidate)
    c_lin = statistics.median(lin for _, lin in candidate)
    r_lin = statistics.median(lin for _, lin in reference) if reference else 0.0
    allowance = max(LINGER_MIN_MS, 3 * r_lin)
    if c_lin <= allowance:
        return None
    return (f"the device stayed busy {c_lin:.3g} ms after each timed region ended (median of {len(candidate)} calls; "
            f"the events measured {c_ms:.3g} ms; the reference's calls leave {r_lin:.3g} ms): work launched on "
            "another stream, which the timer cannot see")


def untimed_work(task_module: Any, make_candidate: Callable[[torch.nn.Module, int], torch.nn.Module],
                 backend: Any, config: Any, calls: int = STREAM_AUDIT_CALLS) -> WorkerOutcome | None:
    """Time `calls` calls each of the candidate and the reference with the backend's timer, and
    judge the device's lingering work (`lingering_problem`); an infeasible outcome or None."""
    device = backend.device
    torch.manual_seed(config.seed + REVERIFY_SEED_OFFSET + 1)
    inputs = [x.to(device) if isinstance(x, torch.Tensor) else x for x in task_module.get_inputs()]
    torch.manual_seed(config.seed)
    reference = task_module.Model(*task_module.get_init_inputs()).to(device).eval()
    candidate = make_candidate(reference, config.seed)
    samples: dict[str, list[tuple[float, float]]] = {"candidate": [], "reference": []}
    with torch.no_grad():
        for _ in range(calls):
            for name, module in (("candidate", candidate), ("reference", reference)):
                timer = backend.timer()
                timer.start()
                out = module(*inputs)
                timer.stop()
                samples[name].append((timer.elapsed_ms(), timer.lingering_ms()))
                del out
    problem = lingering_problem(samples["candidate"], samples["reference"])
    if problem is None:
        return None
    return WorkerOutcome(feasible=False, gate="hack", category=UNTIMED_CATEGORY,
                         reason=f"work left running after the timed region: {problem}"[:300],
                         details=problem + "\nlaunch every kernel on the current stream (or make it wait for "
                                           "yours) so the timed region contains all the work")
