"""`run/<run id>`: the concurrent campaign's single writer of attempts.jsonl and kernels/, and
the keeper of its live counters and metrics.

The counters start from what the run folder already holds, so neither a resumed run nor a
recorder that Ray restarted (its worker killed, e.g. by the memory monitor) starts the status
line and the metrics from zero: finished operators come from summary.json, attempts (and
each unfinished operator's figures so far) from attempts.jsonl. A line a killed writer left
half-written is set aside first, so the next append does not glue onto it. An operator a stop
cut short (`interrupted`) is counted apart, neither done nor failed: a resume runs it again.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import ray
import structlog
from pydantic import ValidationError

from actors.messages import Attempt, EpisodeResult
from launch.kernel_files import KernelTask
from launch.metrics import CampaignCounters, RayCampaignMetrics
from launch.run_summary import INTERRUPTED, RunSummary, RunSummaryError

log = structlog.get_logger("evokernel.campaign")
RECORDER_MARK = ".run_recorder"  # RUN_DIR/.run_recorder: the actor id of the run's recorder


def recorded_attempts(path: Path) -> list[Attempt]:
    """The attempts of attempts.jsonl. Lines that are not an Attempt (the half-written last
    line of a killed writer) are skipped: the counters are figures, not the record."""
    if not path.is_file():
        return []
    attempts, skipped = [], 0
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        if not line.strip():
            continue
        try:
            attempts.append(Attempt.model_validate_json(line))
        except (ValidationError, json.JSONDecodeError):
            skipped += 1
    if skipped:
        log.warning("attempts_unreadable", path=str(path), lines=skipped)
    return attempts


def set_torn_line_aside(path: Path) -> None:
    """A last line without its newline (its writer was killed mid-write) moves to
    attempts.discarded.jsonl (where a resume sets unfinished attempts aside), so the next
    append starts a line of its own instead of gluing onto it."""
    if not path.is_file() or path.stat().st_size == 0:
        return
    with path.open("rb+") as stream:
        stream.seek(-1, 2)
        if stream.read(1) == b"\n":
            return
        stream.seek(0)
        data = stream.read()
        cut = data.rfind(b"\n") + 1
        with (path.parent / "attempts.discarded.jsonl").open("ab") as aside:
            aside.write(data[cut:] + b"\n")
        stream.truncate(cut)
    log.warning("attempts_torn_line_set_aside", path=str(path), chars=len(data) - cut)


def finished_results(run_dir: Path) -> list[EpisodeResult]:
    """The operators summary.json lists as finished (none where there is no summary yet)."""
    try:
        return RunSummary.load(run_dir).operators
    except RunSummaryError:
        return []


class RunRecorder:
    """Appends attempts (fsynced), keeps kernels/ and the campaign's counters and metrics."""

    def __init__(self, run_dir: str, run_id: str, planned: int):
        from launch.campaign import RunFolder

        self.folder = RunFolder(Path(run_dir))
        self.run_id = run_id
        self.counters = CampaignCounters(planned=planned)
        self.partial: dict[str, EpisodeResult] = {}
        self.finished: set[str] = set()  # counted as done
        self.cut_short: set[str] = set()  # counted as interrupted
        self.metrics = RayCampaignMetrics(run_id)
        self._seed()
        self.metrics.on_counters(self.counters)

    def __repr__(self) -> str:
        return f"run/{self.run_id}"

    def _seed(self) -> None:
        """Counters and partial results from the run folder (see the module's docstring)."""
        for result in finished_results(self.folder.path):
            self._count_result(result)
        set_torn_line_aside(self.folder.attempts_path)
        attempts = recorded_attempts(self.folder.attempts_path)
        for attempt in attempts:
            self.counters.add_attempt(attempt)
            if attempt.task not in self.finished:
                self._fold(attempt)
        # The Ray counters of this process start at zero. A new recorder (a resumed run) brings
        # them up to the folder's totals; a restarted one does not: Ray keeps exporting its
        # killed predecessor's counters beside its own (seen with Ray 2.60), and the sums over
        # workers already hold them.
        if not self._restarted():
            self.metrics.add_attempts(Counter((a.stage, a.gate or "none") for a in attempts),
                                      self.counters.tokens_prompt, self.counters.tokens_completion,
                                      self.counters.llm_errors)
        if attempts or self.finished:
            log.info("run_recorder_seeded", run_id=self.run_id, done=self.counters.done,
                     feasible=self.counters.feasible, attempts=self.counters.attempts)

    def _restarted(self) -> bool:
        """Whether Ray restarted this actor (a restart keeps the actor id, which the run folder's
        RECORDER_MARK holds from the first start)."""
        mark = self.folder.path / RECORDER_MARK
        actor_id = ray.get_runtime_context().get_actor_id() or ""
        try:
            restarted = bool(actor_id) and mark.read_text(encoding="utf-8").strip() == actor_id
        except OSError:
            restarted = False
        mark.write_text(actor_id + "\n", encoding="utf-8")
        return restarted

    def append(self, attempt: Attempt) -> None:
        self.folder.append_attempt(attempt)
        self.counters.add_attempt(attempt)
        self.metrics.on_attempt(attempt)
        self._fold(attempt)

    def _fold(self, attempt: Attempt) -> None:
        """The operator's result so far, for one interrupted before it could report. Iterations
        rise within one try, so one that does not begins a new try (an operator lost with its node
        runs again from iteration 1): its figures start afresh, as its kernels/ files do."""
        held = self.partial.get(attempt.task)
        if held is not None and attempt.iteration <= held.attempts:  # `attempts`: its latest iteration
            self.partial.pop(attempt.task)
        self.partial.setdefault(attempt.task, EpisodeResult(task=attempt.task)).record(attempt)

    def operator_started(self, task: KernelTask) -> None:
        """The operator (re)starts: an earlier try's figures, kernels and replies no longer speak for it."""
        self.partial.pop(task.task, None)
        self.folder.operator_started(task)

    def partial_result(self, task: str) -> EpisodeResult:
        return self.partial.get(task, EpisodeResult(task=task)).model_copy()

    def _count_result(self, result: EpisodeResult) -> None:
        counted = self.cut_short if result.stopped_by == INTERRUPTED else self.finished
        if result.task in counted:  # a call Ray retried after a restart that had read it back
            return
        counted.add(result.task)
        self.counters.add_result(result)

    def operator_done(self, result: EpisodeResult) -> None:
        self._count_result(result)
        self.metrics.on_counters(self.counters)

    def set_running(self, running: int) -> CampaignCounters:
        self.counters.running = running
        ended = self.finished | self.cut_short
        self.counters.feasible_in_flight = sum(1 for task, held in self.partial.items()
                                               if held.feasible and task not in ended)
        self.metrics.on_counters(self.counters)
        return self.counters

    def node_id(self) -> str:
        return ray.get_runtime_context().get_node_id()
