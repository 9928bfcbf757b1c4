"""The correctness check again at a task's second, awkward sizes (npu_pool.tasks.tail_sizes chooses
them), run by the worker after the trials at the task size passed. Apart from tail_sizes so
that choosing sizes (which npu_pool.tasks.spec does while loading) does not reach the correctness
check, which sits above the task spec.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from npu_pool.gates import correctness
from npu_pool.tasks.sizing import exec_task
from npu_pool.tasks.tail_sizes import describe


def check_second_size(outcome: Any, request: Any, candidate_at: Callable[[Any, list[Any]], Any], device: str,
                      stage: Callable[[str], None], timings: dict[str, float]) -> Any:
    """In the worker, after the trials at the task size passed (`outcome`): the correctness
    check again at the task's second sizes. A failure there is the verdict, its reason naming
    the sizes; else the reason says what was checked, or why only the task size was.
    `candidate_at(signature, init_inputs)` makes the candidate for one set of sizes."""
    spec, cfg = request.task, request.config
    kernel = request.candidate.format == "kernel"
    if spec.second_sizes is None or (kernel and spec.second_signature is None) or cfg.second_size_trials == 0:
        note = spec.second_size_note or "the second size is off (harness.second_size_trials: 0)"
        return outcome.model_copy(update={"reason": f"{outcome.reason}; {note}"})
    where = f"at the second size ({describe(spec.second_sizes, spec.sizes)})"
    started = time.perf_counter()
    task = exec_task(spec.second_source, spec.path)
    second = correctness.check(task, candidate_at(spec.second_signature, list(task.get_init_inputs())), device,
                               cfg.second_size_trials, cfg.seed + 5000, cfg.atol, cfg.rtol, False,
                               on_trial=lambda label: stage(f"correctness {where}: {label}"),
                               clock=correctness.CallClock(cfg.call_time_limit_factor, cfg.call_time_limit_min_s))
    timings["second_size_s"] = time.perf_counter() - started
    if not second.feasible:
        return second.model_copy(update={
            "reason": f"{where}: {second.reason}",
            "details": f"{second.details}\nThe kernel passed at the task size ({describe(spec.sizes)}) and failed {where}, "
                       "chosen to expose tails: no multiple of a tile, a vector width, a 32-byte block or the block "
                       "count. Take every size from the arguments and handle the last, partial tile."})
    return outcome.model_copy(update={"reason": f"{outcome.reason}; {second.reason} {where}"})
