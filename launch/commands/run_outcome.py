"""What `evokernel run` says at its end: each operator's outcome, the totals, what stopped
operators short of a verdict, the resume command, and the exit status that goes with them."""

from __future__ import annotations

import sys
from pathlib import Path

from launch.run_summary import RunSummary


def continue_with(run_dir: Path, again: str) -> str:
    """The resume command, where the run folder holds a run to resume (a run stopped before
    its first summary, a full disk say, is started again instead)."""
    from launch.run_summary import SUMMARY_FILE

    return f"\n  continue with  {again}" if (run_dir / SUMMARY_FILE).is_file() else ""


def infra_stops(summary: RunSummary, again: str) -> int:
    """1 with a resume hint when infrastructure stopped operators (the LLM endpoint's faults, a node
    lost once too often: not the model's verdict, a resumed run redoes them), else 0."""
    from actors.episode_factory import INFRA
    from launch.ray_campaign.lost_operators import LostOperators

    stopped = [op for op in summary.operators if op.stopped_by == INFRA]
    if not stopped:
        return 0
    lost = [op.task for op in stopped if LostOperators.is_lost(op.error)]
    endpoint = [op.task for op in stopped if op.task not in lost]
    for tasks, why in ((endpoint, "stopped by the LLM endpoint's faults"), (lost, "lost with their node")):
        if tasks:
            print(f"evokernel run: {len(tasks)} operator(s) {why}, not judged: "
                  f"{', '.join(tasks[:5])}{' ...' if len(tasks) > 5 else ''}", file=sys.stderr)
    print(f"  continue with  {again}", file=sys.stderr)
    return 1


def print_summary(summary: RunSummary, run_dir: Path) -> None:
    from actors.episode_factory import INFRA
    from launch.run_summary import INTERRUPTED
    from npu_pool.backends import latency_unit, timing_kind

    unit = latency_unit(timing_kind(summary.settings.get("harness", {}).get("backend")))
    for op in summary.operators:
        if op.feasible:
            outcome = f"{op.best_latency_ms:.4g} {unit}, {op.speedup_vs_eager or 0:.2f}x eager"
            outcome += " (interrupted)" if op.stopped_by == INTERRUPTED else ""
            outcome += f" (not finished: {op.error})" if op.stopped_by == INFRA else ""
        else:
            outcome = "no feasible kernel" + (f" ({op.error})" if op.error else "")
        print(f"{op.task:<32} {outcome:<36} {op.attempts:>3} attempts {op.tokens:>8} tokens")
    t = summary.totals
    # Operators cut short by a stop count as feasible where they had a kernel, but a resume runs
    # them again: said, so "2/2 feasible" after a Ctrl-C is not read as two finished operators.
    # One infrastructure stopped is not counted feasible here: it did not finish (a lost node's
    # operator read "4/4 operators feasible" with all four in error).
    cut = sum(1 for op in summary.operators if op.stopped_by == INTERRUPTED)
    infra = sum(1 for op in summary.operators if op.stopped_by == INFRA)
    notes = [f"{cut} interrupted: --resume runs them again"] if cut else []
    notes += [f"{infra} stopped by infrastructure, not judged"] if infra else []
    feasible = t.feasible - sum(1 for op in summary.operators if op.stopped_by == INFRA and op.feasible)
    note = f" ({'; '.join(notes)})" if notes else ""
    print(f"{feasible}/{t.operators} operators feasible{note}; {t.attempts} attempts, {t.tokens} tokens")
    if summary.lost_tries:  # launch.ray_campaign.lost_operators: each is run again once
        lost = ", ".join(f"{task} ({len(tries)}x)" for task, tries in sorted(summary.lost_tries.items()))
        print(f"episodes lost with their node, each run again once: {lost} (summary.json: lost_tries)")
    print(f"run folder: {run_dir}  (summary.json, attempts.jsonl, kernels/; `evokernel report {run_dir}`)")
    _print_same_failure(run_dir)


def _print_same_failure(run_dir: Path) -> None:
    """A run whose every attempt failed alike says so, with the likely fix (launch.same_failure)."""
    from launch.run_records import CorruptRunFolder, read_attempts
    from launch.same_failure import same_failure

    try:
        failure = same_failure(read_attempts(run_dir, []))
    except CorruptRunFolder:
        return
    if failure is not None:
        print(f"evokernel run: {failure.sentence()}", file=sys.stderr)
