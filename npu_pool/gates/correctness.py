"""The correctness gate, run inside the sandboxed worker.

Every trial draws fresh seeded inputs and weights; the reference and the candidate get
separate clones of the inputs and the same weights; the candidate runs first on odd
trials; the reference's outputs are copied and then overwritten with NaN so a candidate
cannot find them in reused memory. One extra trial feeds signed, scaled normal values so
a kernel that only matches the task's own input range (a copy for ReLU over torch.rand)
is caught; the candidate gets them in the same input buffers as the trial before, so a
result cached by input pointer is caught too. Each candidate call is bounded by a multiple
of the reference's time (CallClock).
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import torch

from npu_pool.protocol import WorkerOutcome
from npu_pool.tasks.sizing import as_output_list

HALF_TYPES = (torch.float16, torch.bfloat16)


def _outcome(feasible: bool, gate: str, category: str, reason: str, details: str = "") -> WorkerOutcome:
    return WorkerOutcome(feasible=feasible, gate=gate, category=category, reason=reason, details=details)


def tolerances(dtype: torch.dtype, atol: float | None, rtol: float | None) -> tuple[float, float]:
    default = 1e-2 if dtype in HALF_TYPES else 1e-4
    return (default if atol is None else atol), (default if rtol is None else rtol)


def _fmt_index(flat: int, shape: torch.Size) -> str:
    idx = []
    for size in reversed(shape):
        idx.append(flat % size if size else 0)
        flat //= size if size else 1
    return "[" + ", ".join(str(i) for i in reversed(idx)) + "]"


# Elements per pass of the quick comparison on the CPU: its temporaries (a difference, a bound,
# two masks) stay in the cache instead of making seven trips through memory per tensor.
COMPARE_CHUNK = 1 << 16


@contextmanager
def own_threads() -> Iterator[None]:
    """One intra-op thread for the harness's own tensor work (copies, equality and tolerance
    checks, NaN fills). That work is memory-bound: a second thread saves no wall time on the
    2-core machines measured, only doubles the CPU time, and on a loaded machine every small op
    waits at a barrier for a thread that is not scheduled (the chunked comparison cost 15 to 40
    times its single-thread CPU time at load 11 to 19). Candidates and references are never
    called inside: they run, and are timed, with the threads the process has."""
    threads = torch.get_num_threads()
    if threads == 1:
        yield
        return
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def _all_close(ref: torch.Tensor, out: torch.Tensor, atol: float, rtol: float, finite_only: bool) -> bool:
    """|out - ref| <= atol + rtol |ref| everywhere (or equal, or both NaN, or, with
    `finite_only`, wherever the reference is not finite), in the native dtype."""
    ref_, out_ = ref.detach().reshape(-1), out.detach().reshape(-1)
    # Chunks only on the CPU: on a device every chunk would be a synchronisation.
    step = COMPARE_CHUNK if ref_.device.type == "cpu" else max(1, ref_.numel())
    for start in range(0, ref_.numel(), step):
        r, o = ref_[start:start + step], out_[start:start + step]
        quick = (o - r).abs_() <= r.abs().mul_(rtol).add_(atol)
        if not bool(quick.all()):  # the rest can only add elements: skipped when all are close already
            quick |= o == r  # equal infinities
            quick |= torch.isnan(o) & torch.isnan(r)
            if finite_only:
                quick |= ~torch.isfinite(r)
            if not bool(quick.all()):
                return False
    return True


def compare(ref: torch.Tensor, out: torch.Tensor, atol: float, rtol: float, finite_only: bool) -> str | None:
    """None when `out` matches `ref`, else mismatch statistics and where."""
    if ref.dtype.is_floating_point and _all_close(ref, out, atol, rtol, finite_only):  # the common case
        return None
    ref64, out64 = ref.detach().double().cpu(), out.detach().double().cpu()
    mask = torch.isfinite(ref64) if finite_only else torch.ones_like(ref64, dtype=torch.bool)
    close = torch.isclose(out64, ref64, rtol=rtol, atol=atol, equal_nan=True) | ~mask
    if bool(close.all()):
        return None
    bad = (~close).flatten().nonzero().flatten()
    diff = (out64 - ref64).abs().flatten()
    diff = torch.where(torch.isnan(diff), torch.full_like(diff, float("inf")), diff)
    worst = int(torch.argmax(torch.where(mask.flatten(), diff, torch.zeros_like(diff))))
    nonfinite = int((~torch.isfinite(out64) & torch.isfinite(ref64)).sum())
    lines = [
        f"{bad.numel()} of {ref.numel()} elements differ ({100.0 * bad.numel() / max(ref.numel(), 1):.3g}%), "
        f"atol={atol:g} rtol={rtol:g}",
        f"max abs diff {float(diff[worst]):.6g} at {_fmt_index(worst, ref.shape)}: "
        f"expected {float(ref64.flatten()[worst]):.6g}, got {float(out64.flatten()[worst]):.6g}",
    ]
    # A near miss often differs by one factor or one constant everywhere (a missing scale, a
    # wrong divisor, a dropped "+ 3"): saying so points at the fix better than any statistic.
    bad_ref, bad_out = ref64.flatten()[bad], out64.flatten()[bad]
    if bad.numel() >= 2 and bool((torch.isfinite(bad_ref) & torch.isfinite(bad_out)).all()):
        if bool((bad_ref != 0).all()):
            ratio = bad_out / bad_ref
            r = float(ratio.median())
            if float((ratio - r).abs().max()) <= 1e-3 * abs(r):
                lines.append(f"ratio got/expected ≈ {r:.6g} over all mismatches")
        offset = bad_out - bad_ref
        o = float(offset.median())
        if o != 0 and float((offset - o).abs().max()) <= 1e-3 * abs(o):
            lines.append(f"offset got-expected ≈ {o:.6g} over all mismatches")
    if nonfinite:
        lines.append(f"{nonfinite} elements are NaN/inf where the reference is finite (unwritten outputs stay NaN)")
    firsts = ", ".join(
        f"{_fmt_index(int(i), ref.shape)} exp {float(ref64.flatten()[i]):.4g} got {float(out64.flatten()[i]):.4g}"
        for i in bad[:4]
    )
    lines.append(f"first mismatches: {firsts}")
    return "\n".join(lines)


def _storage_span(t: torch.Tensor) -> tuple[int, int]:
    start = t.untyped_storage().data_ptr()
    return start, start + t.untyped_storage().nbytes()


def _overlaps(a: torch.Tensor, b: torch.Tensor) -> bool:
    (a0, a1), (b0, b1) = _storage_span(a), _storage_span(b)
    return a0 < b1 and b0 < a1 and a1 > a0 and b1 > b0


def perturb(inputs: list[Any], generator: torch.Generator) -> list[Any]:
    """Signed normal values, at the root-mean-square scale of the original, in place of every
    floating-point input (so a kernel that only handles non-negative inputs shows itself)."""
    out = []
    for x in inputs:
        if isinstance(x, torch.Tensor) and x.dtype.is_floating_point:
            # accumulated in float64 (no overflow short of 1e154) without a float64 copy of x
            rms = float(torch.linalg.vector_norm(x.detach(), dtype=torch.float64)) / x.numel() ** 0.5 if x.numel() else 1.0
            scale = rms if rms > 0 and rms == rms else 1.0
            out.append((torch.randn(x.shape, generator=generator, dtype=torch.float32) * scale).to(x.dtype))
        else:
            out.append(x)
    return out


def _clone(inputs: list[Any], device: str) -> list[Any]:
    return [x.detach().to(device).clone() if isinstance(x, torch.Tensor) else x for x in inputs]


class HarnessDeviceError(RuntimeError):
    """The harness itself compared tensors on two devices: its bug, never the candidate's
    (the worker reports it with gate `infra`)."""


def same_values(a: torch.Tensor, b: torch.Tensor) -> bool:
    """torch.equal, for two tensors the gate holds on one device. Every equality test of the
    gate goes through here, so a comparison across devices (a host copy against a device
    tensor) is a harness error on every backend, not only where torch itself refuses it."""
    if a.device != b.device:
        raise HarnessDeviceError(f"the correctness gate compared a tensor on {a.device} with one on {b.device}")
    return torch.equal(a, b)


def _unchanged(before: list[Any], after: list[Any]) -> bool:
    return all(
        same_values(a, b) or same_values(torch.nan_to_num(a), torch.nan_to_num(b)) if isinstance(a, torch.Tensor) else True
        for a, b in zip(before, after, strict=True)
    )


def _refill_in_place(buffers: list[Any], fresh: list[Any]) -> list[Any]:
    """`fresh` copied into `buffers` where shapes and dtypes agree; `fresh` itself otherwise."""
    if len(buffers) != len(fresh):
        return fresh
    refilled = []
    for old, new in zip(buffers, fresh, strict=True):
        if isinstance(old, torch.Tensor) and isinstance(new, torch.Tensor) and old.shape == new.shape \
                and old.dtype == new.dtype and old.device == new.device:
            old.detach().copy_(new)
            refilled.append(old)
        else:
            refilled.append(new)
    return refilled


class CallClock:
    """Bounds each candidate call to `factor` times the slowest reference call so far (at least
    `min_s`). Past it the worker dies of SIGALRM, which the parent reports as a timeout: a hung
    kernel costs seconds, not the whole run limit. No factor: no per-call bound."""

    def __init__(self, factor: float | None = None, min_s: float = 10.0):
        self.factor, self.min_s, self.slowest_reference_s = factor, min_s, 0.0

    def limit_s(self) -> float | None:
        return None if self.factor is None else max(self.min_s, self.factor * self.slowest_reference_s)

    @contextmanager
    def reference(self) -> Iterator[None]:
        started = time.perf_counter()
        yield
        self.slowest_reference_s = max(self.slowest_reference_s, time.perf_counter() - started)

    @contextmanager
    def candidate(self) -> Iterator[None]:
        limit = self.limit_s()
        if limit is None:
            yield
            return
        signal.signal(signal.SIGALRM, signal.SIG_DFL)  # default action: the process ends
        signal.setitimer(signal.ITIMER_REAL, limit)
        try:
            yield
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)


def _run_reference(reference: torch.nn.Module, inputs: list[Any], clock: CallClock) -> list[torch.Tensor]:
    """The reference's outputs, held by the gate. An output in memory of its own stays where it
    is: held, it is never handed to a candidate by the allocator, and it is the only copy of
    the correct values (as a clone would be). One that shares memory with an input or a
    parameter is copied, and the original overwritten with NaN, so no correct values are left
    in memory a candidate could reuse."""
    with torch.no_grad(), clock.reference():
        produced = as_output_list(reference(*inputs))
    shared = [t for t in [*inputs, *reference.parameters(), *reference.buffers()] if isinstance(t, torch.Tensor) and t.numel()]
    kept = []
    for o in produced:
        if not (o.numel() and any(_overlaps(o, t) for t in shared)):
            kept.append(o.detach())
            continue
        kept.append(o.detach().clone())
        if o.dtype.is_floating_point:
            o.detach().fill_(float("nan"))
    return kept


def _run_candidate(candidate: torch.nn.Module, inputs: list[Any], clock: CallClock) -> Any:
    with torch.no_grad(), clock.candidate():
        return candidate(*inputs)


def check(
    task: Any,
    make_candidate: Callable[[torch.nn.Module, int], torch.nn.Module],
    device: str,
    trials: int,
    seed: int,
    atol: float | None,
    rtol: float | None,
    perturbed_trial: bool,
    on_trial: Callable[[str], None] = lambda _: None,
    clock: CallClock | None = None,
) -> WorkerOutcome:
    """Run the correctness trials of a candidate against the task's reference."""
    clock = clock or CallClock()
    init_inputs = list(task.get_init_inputs())
    shapes_note = ""
    previous: tuple[list[torch.Tensor], list[torch.Tensor]] | None = None
    last_cand_inputs: list[Any] | None = None
    total = trials + (1 if perturbed_trial else 0)
    for t in range(total):
        perturbed = t == trials
        label = "perturbed-input trial" if perturbed else f"trial {t + 1} of {trials}"
        on_trial(label)
        torch.manual_seed(seed + t)
        inputs = list(task.get_inputs())
        if perturbed:
            with own_threads():
                inputs = perturb(inputs, torch.Generator().manual_seed(seed + 7919))
        torch.manual_seed(seed + t)
        reference = task.Model(*init_inputs).to(device).eval()
        candidate = make_candidate(reference, seed + t)
        with own_threads():
            # `inputs` are fresh from get_inputs/perturb and never handed to a model: they are the
            # originals themselves (no third copy); each model gets its own clone.
            originals = [x.detach().to(device) if isinstance(x, torch.Tensor) else x for x in inputs]
            ref_inputs, cand_inputs = _clone(originals, device), _clone(originals, device)
            if perturbed and last_cand_inputs is not None:
                # New data in the very buffers of the last trial: a result cached by input pointer shows.
                cand_inputs = _refill_in_place(last_cand_inputs, cand_inputs)
        shapes_note = "input shapes: " + ", ".join(
            str(list(x.shape)) if isinstance(x, torch.Tensor) else repr(x) for x in originals)

        try:
            if t % 2:  # trial 0 runs the reference first, so the clock knows its time
                raw = _run_candidate(candidate, cand_inputs, clock)
                expected = _run_reference(reference, ref_inputs, clock)
            else:
                expected = _run_reference(reference, ref_inputs, clock)
                raw = _run_candidate(candidate, cand_inputs, clock)
        except Exception as exc:
            oom = isinstance(exc, MemoryError) or "can't allocate memory" in str(exc)
            return _outcome(False, "runtime", "out_of_memory" if oom else "exception", f"{type(exc).__name__} in {label}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300],
                           f"{type(exc).__name__}: {exc}"[:2000] + "\n" + shapes_note)
        with own_threads():
            problem = _check_outputs(raw, expected, cand_inputs, originals, ref_inputs, candidate, reference, device,
                                     atol, rtol, perturbed)
            if problem is not None:
                category, reason, details = problem
                return _outcome(False, "correctness", category, f"{reason} ({label})", details + "\n" + shapes_note)
            produced = as_output_list(raw)
            if previous is not None and not perturbed:
                ref_prev, cand_prev = previous
                if any(not same_values(a, b) for a, b in zip(ref_prev, expected, strict=False)) and all(
                    same_values(a, b) for a, b in zip(cand_prev, produced, strict=False)
                ):
                    return _outcome(False, "correctness", "constant_output",
                                   f"outputs do not change when the inputs change ({label})",
                                   "the reference's outputs differ between trials but the candidate's are identical\n" + shapes_note)
            if not perturbed:
                # Kept where they are (on the device), so the next trial compares on one device.
                previous = (expected, [p.detach().clone() for p in produced])
                last_cand_inputs = cand_inputs
    return _outcome(True, "ok", "ok", f"{total} trials matched", shapes_note)


def _check_outputs(raw, expected, cand_inputs, originals, ref_inputs, candidate, reference, device,
                   atol, rtol, perturbed) -> tuple[str, str, str] | None:
    produced = raw if isinstance(raw, list | tuple) else [raw]
    if len(produced) != len(expected):
        return "output_count", f"returned {len(produced)} outputs, expected {len(expected)}", ""
    params = [p for m in (candidate, reference) for p in list(m.parameters()) + list(m.buffers())]
    for i, (out, ref) in enumerate(zip(produced, expected, strict=True)):
        where = f"output {i}"
        if type(out) is not torch.Tensor:
            return "output_type", f"{where} is a {type(out).__name__}, not a plain torch.Tensor", ""
        if out.device != ref.device:  # also another device of the same kind: every comparison below is on one device
            return "output_device", f"{where} is on {out.device}, expected {ref.device}", ""
        if out.shape != ref.shape:
            return "shape", f"{where} has shape {list(out.shape)}, expected {list(ref.shape)}", ""
        if out.dtype != ref.dtype:
            return "dtype", f"{where} has dtype {out.dtype}, expected {ref.dtype}", ""
        if out.numel() and any(isinstance(x, torch.Tensor) and x.numel() and _overlaps(out, x) for x in cand_inputs):
            return "aliases_input", f"{where} shares memory with an input", "return a new tensor, never an input or a view of one"
        if out.numel() and any(p.numel() and _overlaps(out, p) for p in params):
            return "aliases_parameter", f"{where} shares memory with a parameter", ""
    if _unchanged(originals, ref_inputs) and not _unchanged(originals, cand_inputs):
        return "mutated_input", "the candidate modified its inputs", "inputs must stay unchanged; write results to new outputs"
    for i, (out, ref) in enumerate(zip(produced, expected, strict=True)):
        a, r = tolerances(ref.dtype, atol, rtol)
        if perturbed and not bool(torch.isfinite(ref).any()):
            continue  # the reference is not finite on these inputs: nothing to learn
        mismatch = compare(ref, out, a, r, finite_only=perturbed)
        if mismatch is not None:
            category = "nonfinite" if "NaN/inf" in mismatch and not perturbed else "mismatch"
            return category, f"output {i} differs from the reference", f"output {i} shape {list(ref.shape)}: {mismatch}"
    return None
