"""Read run folders and compute what a report shows: correctness curves, speedups, a table.

A run folder (docs/contracts.md) holds summary.json (a launch.run_summary.RunSummary) and
attempts.jsonl (one actors.messages.Attempt per line), read by launch.run_records. What a killed
or unfinished campaign leaves (a half-written last line, no summary, a summary without
finished_at) is used as far as it goes, and every such problem is stated in the report instead
of stopping it; a corrupt attempts.jsonl raises launch.run_records.CorruptRunFolder. The kernels
the run kept come from launch.kernel_index, the same-failure hint from launch.same_failure.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from pathlib import Path
from statistics import median
from typing import Any

from pydantic import BaseModel, Field

from actors.messages import Attempt, EpisodeResult
from launch.kernel_index import KernelEntry, kept_kernels
from launch.run_lock import in_progress
from launch.run_records import read_attempts, read_summary
from launch.run_summary import RunSummary
from launch.same_failure import SameFailure, same_failure
from npu_pool.backends import timing_kind


class Distribution(BaseModel):
    """Summary statistics of a set of ratios (speedups), one value per operator."""

    n: int = 0
    median: float | None = None
    q25: float | None = None
    q75: float | None = None
    iqr: float | None = None
    geomean: float | None = None
    values: list[float] = Field(default_factory=list)

    @classmethod
    def of(cls, values: list[float]) -> Distribution:
        values = sorted(values)
        if not values:
            return cls()
        q25, q75 = _quantile(values, 0.25), _quantile(values, 0.75)
        geomean = math.exp(sum(math.log(v) for v in values) / len(values))
        return cls(n=len(values), median=median(values), q25=q25, q75=q75, iqr=q75 - q25,
                   geomean=geomean, values=values)


class OperatorRow(BaseModel):
    """One operator of one run: the per-operator table."""

    task: str
    attempts: int = 0
    feasible: bool = False
    first_feasible_iteration: int | None = None
    first_feasible_latency_ms: float | None = None
    best_latency_ms: float | None = None
    speedup_best_over_first: float | None = None
    speedup_vs_eager: float | None = None
    faster_than_eager_iteration: int | None = None
    tokens: int = 0
    failures: dict[str, int] = Field(default_factory=dict, description="infeasible attempts by gate")
    last_reason: str = ""
    error: str | None = None


class Curves(BaseModel):
    """Fraction of operators solved by iteration t (cumulative, over all operators of the run)."""

    iterations: list[int] = Field(default_factory=list)
    fast_0: list[float] = Field(default_factory=list, description="with a feasible kernel")
    fast_1: list[float] = Field(default_factory=list, description="with a feasible kernel faster than eager")


class ItemUse(BaseModel):
    """A memory item by how often it was in an attempt's prompt (Attempt.shown)."""

    id: str
    kind: str = ""
    task: str | None = None
    feasible_attempts: int = Field(0, description="feasible attempts whose prompt showed it")
    attempts: int = Field(0, description="attempts whose prompt showed it")


class QPoint(BaseModel):
    """An item's Q when an attempt's prompt showed it (before that attempt's update)."""

    attempt: int = Field(..., description="the attempt's position in attempts.jsonl (1-based)")
    stage: str
    q: float


class MemoryUse(BaseModel):
    """Which memory items the run's prompts showed, and how their values moved."""

    attempts_with_provenance: int = 0
    top_items: list[ItemUse] = Field(default_factory=list, description="most often in feasible attempts' prompts")
    trajectories: dict[str, list[QPoint]] = Field(default_factory=dict, description="Q over time of the top items")


class RunReport(BaseModel):
    """Everything the report says about one run folder."""

    run_dir: str
    label: str
    run_id: str | None = None
    retrieval: str | None = None
    model: str | None = None
    backend: str | None = None
    timing: str = Field("measured", description="'modelled' for the Ascend C twin: latencies computed, not measured")
    started_at: str | None = None
    finished_at: str | None = None
    operators: list[OperatorRow] = Field(default_factory=list)
    attempts: int = 0
    feasible_operators: int = 0
    faster_than_eager_operators: int = 0
    tokens: int = 0
    curves: Curves = Field(default_factory=Curves)
    speedup_best_over_first: Distribution = Field(default_factory=Distribution)
    speedup_vs_eager: Distribution = Field(default_factory=Distribution)
    memory: MemoryUse = Field(default_factory=MemoryUse)
    kernels: list[KernelEntry] = Field(default_factory=list, description="RUN_DIR/kernels/index.json")
    same_failure: SameFailure | None = None
    problems: list[str] = Field(default_factory=list)


def _quantile(sorted_values: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default)."""
    position = (len(sorted_values) - 1) * q
    low, high = math.floor(position), math.ceil(position)
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (position - low)


def _number(value: Any) -> float | None:
    """A finite float, or None for anything missing, non-numeric, NaN or infinite."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def _positive(value: Any) -> float | None:
    number = _number(value)
    return number if number is not None and number > 0 else None


def _iterations_in_order(attempts: list[Attempt], problems: list[str]) -> dict[str, list[tuple[int, Attempt]]]:
    """Attempts grouped by task, in the order of their iteration."""
    by_task: dict[str, list[tuple[int, Attempt]]] = defaultdict(list)
    duplicates = 0
    seen: set[tuple[str, int]] = set()
    for attempt in attempts:
        if (attempt.task, attempt.iteration) in seen:
            duplicates += 1
            continue
        seen.add((attempt.task, attempt.iteration))
        by_task[attempt.task].append((attempt.iteration, attempt))
    if duplicates:
        problems.append(f"{duplicates} duplicate attempt(s) (same task and iteration): only the first was counted")
    for entries in by_task.values():
        entries.sort(key=lambda entry: entry[0])
    return by_task


def _operator_row(task: str, entries: list[tuple[int, Attempt]], counts: Counter) -> OperatorRow:
    row = OperatorRow(task=task, attempts=len(entries))
    failures: Counter = Counter()
    for iteration, attempt in entries:
        row.tokens += attempt.tokens_prompt + attempt.tokens_completion
        if not attempt.feasible:
            failures[attempt.gate or "unknown"] += 1
            row.last_reason = attempt.reason
            continue
        latency = _positive(attempt.latency_ms)
        speedup = _positive(attempt.speedup_vs_eager)
        if latency is None:
            counts["feasible but no latency_ms"] += 1
        if speedup is None:
            counts["feasible but no speedup_vs_eager"] += 1
        if not row.feasible:
            row.feasible, row.first_feasible_iteration = True, iteration
        if row.first_feasible_latency_ms is None and latency is not None:
            row.first_feasible_latency_ms = latency
        # The operator's speedup over eager is that of its fastest kernel (as in EpisodeResult);
        # the best measured speedup stands in only where no latency was recorded.
        if latency is not None and (row.best_latency_ms is None or latency < row.best_latency_ms):
            row.best_latency_ms, row.speedup_vs_eager = latency, speedup
        elif row.best_latency_ms is None and speedup is not None and speedup > (row.speedup_vs_eager or 0):
            row.speedup_vs_eager = speedup
        if speedup is not None and speedup > 1 and row.faster_than_eager_iteration is None:
            row.faster_than_eager_iteration = iteration
    row.failures = dict(failures.most_common())
    if row.first_feasible_latency_ms and row.best_latency_ms:
        row.speedup_best_over_first = row.first_feasible_latency_ms / row.best_latency_ms
    return row


def _row_from_summary(entry: EpisodeResult, problems: list[str]) -> OperatorRow:
    """An operator without attempts in attempts.jsonl, described by its summary.json entry alone."""
    row = OperatorRow(task=entry.task)
    if not entry.attempts:
        return row
    row.attempts = entry.attempts
    row.first_feasible_iteration = entry.first_feasible_iteration
    row.feasible = entry.feasible and row.first_feasible_iteration is not None
    row.first_feasible_latency_ms = _positive(entry.first_feasible_latency_ms)
    row.best_latency_ms = _positive(entry.best_latency_ms)
    row.speedup_best_over_first = _positive(entry.speedup_best_over_first)
    row.speedup_vs_eager = _positive(entry.speedup_vs_eager)
    row.tokens = entry.tokens
    problems.append(f"{row.task}: {entry.attempts} attempt(s) in summary.json but none in attempts.jsonl: "
                    "figures from summary.json (fast_1 unknown)")
    return row


def _curves(rows: list[OperatorRow], last_iteration: int, first_iteration: int) -> Curves:
    if not rows or last_iteration < first_iteration:
        return Curves()
    iterations = list(range(first_iteration, last_iteration + 1))
    total = len(rows)

    def solved_by(field: str) -> list[float]:
        reached = [getattr(row, field) for row in rows if getattr(row, field) is not None]
        return [sum(1 for it in reached if it <= t) / total for t in iterations]

    return Curves(iterations=iterations, fast_0=solved_by("first_feasible_iteration"),
                  fast_1=solved_by("faster_than_eager_iteration"))


TOP_ITEMS = 10
TRAJECTORIES = 5


def memory_use(attempts: list[Attempt]) -> MemoryUse:
    """Count the items each attempt's prompt showed (its `shown` provenance), most often in the
    prompts of feasible attempts first; the Q values recorded with them trace how the values of
    the top items moved over the run (attempts in file order, which is the order they ended)."""
    uses: dict[str, ItemUse] = {}
    points: dict[str, list[QPoint]] = defaultdict(list)
    with_provenance = 0
    for position, attempt in enumerate(attempts, start=1):
        if not attempt.shown:
            continue
        with_provenance += 1
        for record in attempt.shown:
            use = uses.setdefault(record.id, ItemUse(id=record.id, kind=record.kind, task=record.task))
            use.attempts += 1
            use.feasible_attempts += attempt.feasible
            q = _number(record.q)
            if q is not None:
                points[record.id].append(QPoint(attempt=position, stage=attempt.stage, q=q))
    top = sorted(uses.values(), key=lambda u: (-u.feasible_attempts, -u.attempts, u.id))[:TOP_ITEMS]
    return MemoryUse(attempts_with_provenance=with_provenance, top_items=top,
                     trajectories={u.id: points[u.id] for u in top[:TRAJECTORIES] if points[u.id]})


def _setting(settings: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(settings, dict):
            return None
        settings = settings.get(key)
    return settings


def analyse_run(run_dir: Path) -> RunReport:
    """Read one run folder and compute its figures; what a killed or unfinished campaign leaves
    is listed as a problem; a corrupt attempts.jsonl raises CorruptRunFolder."""
    problems: list[str] = []
    loaded = read_summary(run_dir, problems)
    summary = loaded or RunSummary()
    attempts = read_attempts(run_dir, problems)
    by_task = _iterations_in_order(attempts, problems)
    counts: Counter = Counter()
    rows = {task: _operator_row(task, entries, counts) for task, entries in by_task.items()}
    problems.extend(f"{n} attempt(s): {what}" for what, n in counts.items())

    # Operators the summary knows but no attempt reached (an episode that failed early)
    # still count: the denominator is every operator of the run.
    for entry in summary.operators:
        if entry.task not in rows:
            rows[entry.task] = _row_from_summary(entry, problems)
        row = rows[entry.task]
        if entry.error:
            row.error = entry.error
            problems.append(f"{row.task}: episode error: {row.error}")
        if entry.feasible and not row.feasible and row.attempts:
            problems.append(f"{row.task}: summary.json says feasible but no feasible attempt was recorded")
    # A campaign lists its planned operators up front: those never started count as unsolved.
    # While the run goes (its process holds the folder's lock: the live report) they are
    # waiting or on their first attempt, which is no problem of the input.
    unstarted = [task for task in summary.planned if task not in rows]
    going = (loaded is not None and loaded.finished_at is None and not loaded.interrupted and not loaded.error
             and in_progress(run_dir))
    for task in unstarted:
        rows[task] = OperatorRow(task=task, error="no attempt yet" if going else "not started")
    if unstarted and not going:
        problems.append(f"{len(unstarted)} planned operator(s) never started: {', '.join(sorted(unstarted))}")
    for row in rows.values():
        if row.attempts == 0 and row.error is None:
            problems.append(f"{row.task}: no attempt recorded")
    if not rows:
        problems.append("no operators: the run is empty")

    operators = sorted(rows.values(), key=lambda row: row.task)
    recorded = [it for entries in by_task.values() for it, _ in entries]
    settings = summary.settings
    budget = _setting(settings, "episode", "iterations")
    first = min(recorded, default=1)
    last = max(recorded + ([budget + first - 1] if isinstance(budget, int) else []), default=0)
    failure = same_failure(attempts)
    if failure is not None:
        problems.append(failure.sentence())
    kernels = kept_kernels(run_dir, problems)
    if summary.error:
        problems.append(f"campaign error: {summary.error}")
    if summary.interrupted:
        problems.append("the campaign was interrupted (Ctrl-C or SIGTERM): evokernel run --resume continues it")
    elif loaded is not None and loaded.finished_at is None and not going:
        problems.append("summary.json has no finished_at: the campaign stopped before the end (killed?) and "
                        "nothing runs it now: evokernel run --resume continues it")
    return RunReport(
        run_dir=str(run_dir),
        label=run_dir.name,
        run_id=summary.run_id or next((a.run_id for a in attempts if a.run_id), None),
        retrieval=_setting(settings, "memory", "retrieval"),
        model=_setting(settings, "llm", "model"),
        backend=_setting(settings, "harness", "backend"),
        timing=timing_kind(_setting(settings, "harness", "backend")),
        started_at=summary.started_at,
        finished_at=summary.finished_at,
        operators=operators,
        attempts=sum(row.attempts for row in operators),
        feasible_operators=sum(row.feasible for row in operators),
        faster_than_eager_operators=sum(row.faster_than_eager_iteration is not None for row in operators),
        tokens=sum(row.tokens for row in operators),
        curves=_curves(operators, last, first),
        speedup_best_over_first=Distribution.of(
            [r.speedup_best_over_first for r in operators if r.speedup_best_over_first is not None]),
        speedup_vs_eager=Distribution.of([r.speedup_vs_eager for r in operators if r.speedup_vs_eager is not None]),
        memory=memory_use(attempts),
        kernels=kernels,
        same_failure=failure,
        problems=problems,
    )


def label_runs(reports: list[RunReport]) -> None:
    """Name each run by its retrieval mode; add the folder name where modes repeat or are unknown."""
    modes = Counter(report.retrieval for report in reports)
    for report in reports:
        name = Path(report.run_dir).name
        if report.retrieval and modes[report.retrieval] == 1:
            report.label = report.retrieval if len(reports) > 1 else f"{report.retrieval} ({name})"
        elif report.retrieval:
            report.label = f"{report.retrieval} ({name})"
        else:
            report.label = name
