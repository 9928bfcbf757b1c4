"""What `evokernel run` says at its end, and the exit status that goes with it.

One rule for every end (docs/harness.md, "Exit codes"), decided by what summary.json says and
nothing else, so the code, the closing lines and the file always agree:

- 130: the run was interrupted (Ctrl-C, SIGTERM) before every operator was judged;
- 1: the run ended without judging every operator, and `--resume` continues it as it is: it
  stopped early (a fatal LLM configuration, a lost endpoint, a full disk, a lost Ray head), or
  operators were stopped by infrastructure (the endpoint's faults, a lost node, attempts the
  machine's own memory limit stopped) or failed in the harness;
- 2: bad input: a task file that does not load (after fixing it, `--resume` runs it);
- 0: every operator was judged (feasible or not).

The first that applies wins, in that order: a run that is both resumable and holds a broken task
file exits 1, so a caller that resumes on 1 ends on 2 or 0. Usage errors before a run starts
(flags, settings, a suite without tasks, a bank or run folder in use, a backend that cannot run
here) exit 2 from launch.cli.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import structlog

from launch.run_summary import INTERRUPTED, RunSummary

log = structlog.get_logger("evokernel.run")

COMPLETE, NOT_COMPLETE, BAD_INPUT, INTERRUPTED_EXIT = 0, 1, 2, 130
JUDGED = ("iterations", "tokens", "wall_time", "plateau", "no_compile")  # EpisodeResult.stopped_by of an operator that ran to its end (plateau, no_compile: actors/stops.py)
TASK_LOAD = "task load:"
TIME_BUDGET = ("budget", "suspended")  # stopped_by of operators a time budget stopped or held (a resume continues them)  # how the error of an operator whose task file did not load begins (actors.episode_factory)


def judged(op: Any) -> bool:
    return op.stopped_by in JUDGED


def bad_input(op: Any) -> bool:
    return op.stopped_by == "error" and (op.error or "").startswith(TASK_LOAD)


def exit_code(summary: RunSummary) -> int:
    """The run's exit status by the rule above."""
    if summary.interrupted:
        return INTERRUPTED_EXIT
    listed = {op.task for op in summary.operators}
    if summary.error or any(task not in listed for task in summary.planned):
        return NOT_COMPLETE
    if any(not judged(op) and not bad_input(op) for op in summary.operators):
        return NOT_COMPLETE
    if any(bad_input(op) for op in summary.operators):
        return BAD_INPUT
    return COMPLETE


def continue_with(run_dir: Path, again: str) -> str:
    """The resume command, where the run folder holds a run to resume (a run stopped before
    its first summary, a full disk say, is started again instead)."""
    from launch.run_summary import SUMMARY_FILE

    return f"\n  continue with  {again}" if (run_dir / SUMMARY_FILE).is_file() else ""


def _names(ops: list[Any]) -> str:
    tasks = [op.task for op in ops]
    return f"{', '.join(tasks[:5])}{' ...' if len(tasks) > 5 else ''}"


def end_lines(summary: RunSummary, again: str) -> list[str]:
    """The closing lines (stderr) of a run whose summary is SUMMARY: why it is not complete,
    operator by kind, and the resume command once."""
    from launch.infra_attempts import HOST_MEMORY, host_memory_advice
    from launch.ray_campaign.lost_operators import LostOperators

    code = exit_code(summary)
    if code == INTERRUPTED_EXIT:
        return [f"interrupted: continue with  {again}"]
    lines = [f"evokernel run: stopped: {summary.error}"] if summary.error else []
    stopped = [op for op in summary.operators if not judged(op) and op.error != summary.error]
    host = [op for op in stopped if (op.error or "").startswith(HOST_MEMORY)]
    lost = [op for op in stopped if LostOperators.is_lost(op.error)]
    endpoint = [op for op in stopped if (op.error or "").startswith("LLM endpoint")]
    task_files = [op for op in stopped if bad_input(op)]
    failed = [op for op in stopped if op.stopped_by == "error" and not bad_input(op)]
    budget = [op for op in stopped if op.stopped_by in TIME_BUDGET]
    other = [op for op in stopped if op not in (*host, *lost, *endpoint, *task_files, *failed, *budget)
             and op.stopped_by != INTERRUPTED]
    for ops, why in ((budget, "stopped by the time budget (run.hours)"),
                     (endpoint, "stopped by the LLM endpoint's faults"), (lost, "lost with their node"),
                     (other, "stopped by infrastructure"), (failed, "failed in the harness or the episode "
                                                            "(the log has the traceback)")):
        if ops:
            lines.append(f"evokernel run: {len(ops)} operator(s) {why}, not judged: {_names(ops)}")
            if ops is lost and any("OOM killer" in (op.error or "") for op in ops):
                lines.append(f"  {next(op.error for op in ops if 'OOM killer' in (op.error or ''))}")
    flags = ""
    if host:
        advice, flags = host_memory_advice(summary)
        lines.append(f"evokernel run: {len(host)} operator(s) had attempts stopped by the machine's own memory "
                     f"limit, not judged: {_names(host)}; {advice}")
    for op in task_files:
        lines.append(f"evokernel run: {op.task} was not run: {op.error}")
    listed = {op.task for op in summary.operators}
    if not summary.error and (missing := [t for t in summary.planned if t not in listed]):
        lines.append(f"evokernel run: {len(missing)} operator(s) never ended: {', '.join(missing[:5])}")
    if code == BAD_INPUT:
        lines.append(f"  fix the task file(s), then continue with  {again}")
    elif code == NOT_COMPLETE:
        lines.append(f"  continue with  {again}{' ' + flags if flags else ''}")
    return lines


def end_of_run(summary: RunSummary, again: str) -> int:
    """Print the closing lines; the exit status."""
    for line in end_lines(summary, again):
        print(line, file=sys.stderr)
    return exit_code(summary)


def finish(run_dir: Path, again: str, mode: str, *, interrupted: bool = False, stopped: str | None = None) -> int:
    """The end of every `evokernel run` that got as far as its campaign: what summary.json says
    decides the table, the closing lines and the exit status. A stop (INTERRUPTED) or an error
    (STOPPED) that escaped the campaign before it recorded its end is recorded here first, so
    the file agrees with the exit status; one that came after the end changes nothing."""
    from launch.run_summary import RunSummaryError

    try:
        summary = RunSummary.load(run_dir)
    except RunSummaryError:  # nothing was recorded (a full disk before the first summary): the line alone
        if interrupted:
            print(f"interrupted: continue with  {again}", file=sys.stderr)
            return INTERRUPTED_EXIT
        print(f"evokernel run: stopped: {stopped or 'the run ended before its first summary'}", file=sys.stderr)
        return NOT_COMPLETE
    summary = _record_the_end(summary, run_dir, mode, interrupted, stopped)
    print_summary(summary, run_dir)
    return end_of_run(summary, again)


def _record_the_end(summary: RunSummary, run_dir: Path, mode: str, interrupted: bool,
                    stopped: str | None) -> RunSummary:
    from actors.messages import utc_now

    ended = summary.interrupted or summary.error is not None or summary.finished_at is not None
    if ended:
        if interrupted and not summary.interrupted:
            log.warning("stop_after_the_end", detail="the run had recorded its end: the stop changes nothing")
        return summary
    update: dict[str, Any] = {}
    if interrupted:
        update["interrupted"] = True
    elif stopped:
        update["error"] = stopped
    else:
        return summary
    if mode == "ray":  # a Ray run records when it stopped, however it stopped (RunSummary.finished_at)
        update["finished_at"] = utc_now()
    summary = summary.model_copy(update=update)
    try:
        summary.write(run_dir)
    except OSError as exc:
        log.error("summary_not_written", error=str(exc))
    return summary


def print_summary(summary: RunSummary, run_dir: Path) -> None:
    from actors.episode_factory import INFRA
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
