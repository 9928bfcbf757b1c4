"""A campaign: one episode per selected operator, written to a run folder as it goes.

The run folder holds `attempts.jsonl` (one Attempt per line, appended and flushed as each
attempt finishes: nothing is lost on a crash) and `summary.json` (a launch.run_summary.RunSummary,
rewritten atomically after every operator). Operators run one after another, in this process
(`evokernel run --no-ray`, the learning benchmark); launch.ray_campaign.concurrent_campaign runs them over Ray.
Ctrl-C (and SIGTERM, which `evokernel run` turns into Ctrl-C) keeps what the operator in flight
did, marked `interrupted`, and leaves `finished_at` empty; `evokernel run --resume` continues.
"""

from __future__ import annotations

import asyncio
import fnmatch
import os
import re
import sys
import uuid
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import structlog

from actors.drafter import Drafter
from actors.episode import AttemptNotRecorded
from actors.episode_factory import INFRA, build_episode, run_to_end
from actors.episode_turns import restore, suspend
from actors.evaluator import Evaluator
from actors.llm_client import wait_for_endpoint
from actors.messages import Attempt, EpisodeResult, utc_now
from actors.ports import InProcess
from actors.refiner import Refiner
from launch.atomic_file import write_atomically
from launch.budget import SUSPENDED, TurnQueue
from launch.config import Settings
from launch.infra_attempts import with_unjudged_attempts
from launch.kernel_files import KernelFolder, KernelTask, kernel_task
from launch.reply_files import ReplyFolder
from launch.run_summary import INTERRUPTED, RunSummary, RunSummaryError
from memory_actor.disk.bank_errors import BankWriteFailed
from npu_pool.backends import timing_kind

log = structlog.get_logger("evokernel.campaign")
REPOSITORY = Path(__file__).resolve().parents[1]


class CampaignError(Exception):
    """The campaign cannot start or had to stop (bad suite, fatal LLM configuration)."""


class RunFolderWriteFailed(CampaignError, AttemptNotRecorded):
    """The run folder cannot be written (a full disk): the run stops; `--resume` continues it.
    Raised by the episode's on_attempt too, which ends the episode and the campaign (run_to_end)."""


def folder_failure(exc: OSError, path: Path) -> RunFolderWriteFailed:
    what = os.strerror(exc.errno).lower() if exc.errno else str(exc)
    return RunFolderWriteFailed(f"cannot write the run folder: {what} under {path}")


def default_suite() -> Path:
    """The bundled CPU suite of this checkout."""
    return REPOSITORY / "suites" / "cpu"


def _natural_key(path: Path) -> list[Any]:
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", str(path))]


def select_tasks(suite: Path, pattern: str = "*") -> list[Path]:
    """Task files under `suite` whose name (or path inside the suite) matches `pattern`:
    one glob, or several separated by commas."""
    if not suite.is_dir():
        raise CampaignError(f"suite folder not found: {suite}")
    globs = [g.strip() for g in pattern.split(",") if g.strip()] or ["*"]
    found = [p for p in suite.rglob("*.py") if not p.name.startswith("_")
             and any(fnmatch.fnmatch(p.name, g) or fnmatch.fnmatch(str(p.relative_to(suite)), g)
                     or fnmatch.fnmatch(p.stem, g) for g in globs)]
    if not found:
        raise CampaignError(f"no task in {suite} matches {pattern!r}")
    return sorted(found, key=lambda p: _natural_key(p.relative_to(suite)))


def new_run_id() -> str:
    return datetime.now(UTC).strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]


class RunFolder:
    """attempts.jsonl appended line by line; summary.json replaced atomically; kernels/ kept
    up to date (launch.kernel_files); the replies no code came from in replies/ (launch.reply_files)."""

    def __init__(self, path: Path):
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        self.attempts_path = path / "attempts.jsonl"
        self.summary_path = path / "summary.json"
        self.kernels = KernelFolder(path)
        self.replies = ReplyFolder(path)
        # RUN_DIR/report/ follows the run. Imported here, before any operator runs: a Ctrl-C
        # that lands inside matplotlib's first import leaves it half-loaded in sys.modules,
        # and every later report in the process then fails ("no attribute 'artist'").
        from launch.report_writer import LiveReport

        self.live_report = LiveReport(path)

    def append_attempt(self, attempt: Attempt) -> None:
        """RunFolderWriteFailed when the disk is full (a torn last line is set aside on resume)."""
        attempt = self.replies.record(attempt)  # first: the line names the reply's file
        try:
            with self.attempts_path.open("a", encoding="utf-8") as stream:
                stream.write(attempt.model_dump_json() + "\n")
                stream.flush()
                os.fsync(stream.fileno())
            self.kernels.record(attempt)
        except OSError as exc:
            raise folder_failure(exc, self.path) from None

    def operator_started(self, task: KernelTask) -> None:
        """The operator (re)starts: the kernels and replies an earlier try of it left are removed."""
        self.kernels.operator_started(task)
        self.replies.operator_started(task.task)

    def write_summary(self, summary: RunSummary) -> None:
        try:
            summary.write(self.path)
        except OSError as exc:  # the old summary.json stays whole (it is replaced atomically)
            raise folder_failure(exc, self.path) from None
        final = summary.finished_at is not None or summary.interrupted
        if summary.operators or final:
            self.live_report.refresh(final=final)


def run_summary(campaign: Any, mode: str, finished: bool, **extra: Any) -> RunSummary:
    """The summary of either campaign (they keep the same attributes: run_id, started_at,
    settings, planned, operators, error, interrupted, resumed)."""
    return RunSummary(
        run_id=campaign.run_id, started_at=campaign.started_at, finished_at=utc_now() if finished else None,
        mode=mode, settings=campaign.settings.redacted(), planned=[p.stem for p in campaign.planned],
        planned_paths=[str(p.resolve()) for p in campaign.planned], operators=campaign.operators,
        error=campaign.error, interrupted=campaign.interrupted, resumed_at=campaign.resumed,
        budget=turns.record(campaign.operators) if (turns := getattr(campaign, "turns", None)) is not None else None, **extra)


class Campaign:
    """Builds the memory, drafter, refiner and evaluator once, then runs the operators."""

    def __init__(self, settings: Settings, run_dir: Path, *, run_id: str | None = None):
        self.settings = settings
        self.folder = RunFolder(run_dir)
        self.run_id = run_id or new_run_id()
        self.operators: list[EpisodeResult] = []
        self.planned: list[Path] = []
        self.started_at = utc_now()
        self.error: str | None = None
        self.interrupted = False
        self.resumed: list[str] = []
        self.turns: TurnQueue | None = None  # the operators to run, in turns with a time budget (launch/budget.py)
        self.budget_before: dict[str, Any] | None = None  # a resumed run's budget so far
        # awaited with the memory port after each finished operator (the learning benchmark
        # checkpoints its bank there); None: nothing
        self.after_operator: Callable[[Any], Awaitable[None]] | None = None

    @classmethod
    def resume(cls, settings: Settings, run_dir: Path) -> tuple[Campaign, list[Path]]:
        """A campaign that continues RUN_DIR in this process: finished operators are kept, the
        others run again (their earlier attempts move to attempts.discarded.jsonl)."""
        summary, paths, kept = resume_plan(run_dir, settings)
        campaign = cls(settings, run_dir, run_id=summary.run_id)
        campaign.started_at = summary.started_at or campaign.started_at
        campaign.operators = kept
        campaign.resumed = [*summary.resumed_at, utc_now()]
        campaign.budget_before = summary.budget
        discard_attempts(campaign.folder, {op.task for op in kept})
        log.info("campaign_resume", run_id=campaign.run_id, finished=len(kept), remaining=len(paths) - len(kept))
        return campaign, paths

    def summary(self, finished: bool) -> RunSummary:
        return run_summary(self, "single-process", finished)

    async def run(self, task_paths: list[Path]) -> dict[str, Any]:
        """Run every operator; returns the final summary as summary.json holds it. Interrupted
        (Ctrl-C, task cancelled), it records that and re-raises."""
        self.planned = list(task_paths)
        # The operators not finished (a resumed run's budget-stopped ones continue from their state)
        self.turns = TurnQueue.of(self, task_paths)
        try:
            return await self._run(self.turns)
        except (KeyboardInterrupt, asyncio.CancelledError):
            self.interrupted = True
            self.operators.extend(self.turns.left_at_the_end(SUSPENDED))  # a resume continues them
            self.folder.write_summary(self.summary(False))
            log.warning("campaign_interrupted", run_id=self.run_id, done=len(self.operators),
                        not_started=len(task_paths) - len(self.operators))
            raise

    async def _run(self, turns: TurnQueue) -> dict[str, Any]:
        from npu_pool.backends import get_backend

        backend = get_backend(self.settings.harness.backend)
        log.info("campaign_start", run_id=self.run_id, operators=len(turns.waiting), backend=backend.name,
                 mode="single-process", run_dir=str(self.folder.path))
        _say(turns.line())  # operators left, attempts planned, the end estimate (launch/budget.py)
        self.folder.write_summary(self.summary(False))

        def on_attempt(attempt: Attempt) -> None:
            self.folder.append_attempt(attempt)
            turns.attempt_done(attempt.wall_s)
            log.info("progress", status=turns.line(in_running=1))

        async with AsyncExitStack() as stack:
            memory, drafter, refiner, evaluator = await self._components(stack)
            while (turn := turns.next()) is not None:
                path = turn.path
                episode = turn.episode or build_episode(path, self.settings, backend, memory=memory, drafter=drafter,
                                                        refiner=refiner, evaluator=evaluator, run_id=self.run_id,
                                                        on_attempt=on_attempt)
                if isinstance(episode, EpisodeResult):  # the task file did not load: that operator only
                    log.error("task_load_failed", task=path.stem, error=episode.error)
                    self._finish(episode)
                    continue
                if turn.first:
                    log.info("operator_start", task=episode.brief.task_id, format=episode.brief.candidate_format,
                             sizes=episode.brief.sizes)
                    self.folder.operator_started(
                        kernel_task(episode.task, backend.name, episode.brief.candidate_format))
                elif turn.episode is None:  # a resumed run's operator, continued from its state
                    restore(episode, turn.state)
                episode.pace = turn.pace
                try:
                    end = await run_to_end(episode)
                except (KeyboardInterrupt, asyncio.CancelledError):
                    self.operators.append(episode.result.model_copy(
                        update={"stopped_by": INTERRUPTED, "error": INTERRUPTED}))
                    raise
                if turns.returned(turn, end.result, suspend(episode) if turns.hours is not None else None):
                    turn.episode = episode  # moved down: it waits for its next turn
                    continue
                self._finish(with_unjudged_attempts(end.result, episode.attempts))
                if end.fatal:
                    self.error = end.fatal
                    self.folder.write_summary(self.summary(False))
                    raise CampaignError(end.fatal)
                if self.after_operator is not None:
                    await self.after_operator(memory)
                if end.llm_lost:
                    await self._wait_for_llm()
            for result in turns.left_at_the_end():  # waiting when the budget ran out: a resume continues them
                self._finish(result)
        if (bought := turns.bought(self.operators, f"evokernel run --no-ray --resume {self.folder.path}")) is not None:
            _say(bought)
        summary = self.summary(True)
        self.folder.write_summary(summary)
        done = summary.totals.model_dump()
        done["usage"] = f"{done.pop('tokens')} tok"  # a key named like 'token' would be redacted
        log.info("campaign_done", run_id=self.run_id, **done)
        return summary.model_dump(mode="json")

    async def _wait_for_llm(self) -> None:
        """The campaigns' one lost-endpoint policy: pause until the endpoint answers again, and
        stop (partial results kept) if it does not within llm.endpoint_wait_s."""
        llm = self.settings.llm
        if await asyncio.to_thread(wait_for_endpoint, llm.base_url, llm.endpoint_wait_s, say=_say):
            return
        self.error = f"the LLM endpoint {llm.base_url} did not come back within {llm.endpoint_wait_s:.0f} s"
        self.folder.write_summary(self.summary(False))
        raise CampaignError(self.error)

    def _finish(self, result: EpisodeResult) -> None:
        self.operators.append(result)
        self.folder.write_summary(self.summary(False))
        log.info("operator_done", task=result.task, feasible=result.feasible, best_latency_ms=result.best_latency_ms,
                 speedup_vs_eager=result.speedup_vs_eager, timing=timing_kind(self.settings.harness.backend),
                 attempts=result.attempts, usage=f"{result.tokens} tok", error=result.error)

    async def _components(self, stack: AsyncExitStack) -> tuple[Any, Any, Any, Any]:
        settings = self.settings
        bank = self._open_bank()
        stack.callback(self._close_bank, bank)
        drafter, refiner = Drafter(settings.llm), Refiner(settings.llm)
        stack.push_async_callback(drafter.aclose)
        stack.push_async_callback(refiner.aclose)
        return InProcess(bank), InProcess(drafter), InProcess(refiner), InProcess(Evaluator(settings.harness))

    def _close_bank(self, bank: Any) -> None:
        """Everything durable and the lease given back; a bank that cannot be written (a full
        disk) is the run's error, in one line (the summary and the resume command say it)."""
        try:
            bank.close()
        except BankWriteFailed as exc:
            log.error("memory_close_failed", reason=str(exc))
            self.error = self.error or str(exc)

    def _open_bank(self) -> Any:
        """The campaign's memory bank, opened as its one writer (a subclass may open it otherwise:
        bench.learning.evaluation's FrozenCampaign reads a frozen bank)."""
        from memory_actor.bank import MemoryBank

        return MemoryBank(self.settings.memory, owner=f"evokernel run {self.run_id}")


def _say(line: str) -> None:
    """One line on the user's terminal (the status of a wait, say)."""
    print(f"evokernel run: {line}", file=sys.stderr, flush=True)


def resume_plan(run_dir: Path, settings: Settings | None = None) -> tuple[RunSummary, list[Path], list[EpisodeResult]]:
    """What continuing RUN_DIR means, in either mode: its summary, the planned task files, and
    the operators finished there (kept; the others run again). Task files that moved with
    their checkout (the run folder copied to another clone) are found again by their path
    below the settings' suite or the bundled one (relocated_tasks)."""
    summary = load_summary(run_dir)
    paths = [Path(p) for p in summary.planned_paths]
    if not paths:
        raise CampaignError(f"{run_dir}/summary.json lists no planned operators: not a resumable run folder")
    if any(not p.is_file() for p in paths):
        suites = [Path(settings.run.suite).expanduser()] if settings is not None and settings.run.suite else []
        paths = relocated_tasks(paths, [*suites, default_suite()])
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise CampaignError(f"task files of the run are gone: {', '.join(missing[:3])}")
    return summary, paths, finished_operators(summary.operators)


def relocated_tasks(paths: list[Path], suites: list[Path]) -> list[Path]:
    """Each missing task file replaced by the file at the same path below the first of SUITES
    whose folder name the old path has (`/old/clone/suites/cpu/level1/4_ReLU.py` ->
    `SUITE/level1/4_ReLU.py` for a SUITE named cpu); a file found nowhere stays as it was (the
    caller says it is gone). Never by file name alone: a same-named task elsewhere is not it."""
    found: list[Path] = []
    for path in paths:
        match = path
        for suite in [] if path.is_file() else suites:
            folders = path.parts[:-1]
            if suite.name not in folders:
                continue
            below = len(folders) - folders[::-1].index(suite.name)
            if (candidate := suite / Path(*path.parts[below:])).is_file():
                match = candidate
                break
        found.append(match)
    moved = [(old, new) for old, new in zip(paths, found, strict=True) if old != new]
    if moved:
        log.warning("campaign_resume_tasks_relocated", moved=len(moved), example=f"{moved[0][0]} -> {moved[0][1]}")
    return found


def finished_operators(operators: list[EpisodeResult]) -> list[EpisodeResult]:
    """The operators a resumed run keeps: not interrupted, not stopped by an error."""
    return [op for op in operators if op.stopped_by not in (INTERRUPTED, "error", INFRA)]


def load_summary(run_dir: Path) -> RunSummary:
    try:
        return RunSummary.load(run_dir)
    except RunSummaryError as exc:
        raise CampaignError(str(exc)) from None


def discard_attempts(folder: RunFolder, keep: set[str]) -> None:
    """Keep the attempts of finished operators; move the rest aside (they will run again)."""
    import json

    if not folder.attempts_path.exists():
        return
    kept, dropped = [], []
    for line in folder.attempts_path.read_text(encoding="utf-8").splitlines():
        try:
            task = json.loads(line).get("task")
        except ValueError:  # the half-written last line of a killed run
            task = None
        (kept if task in keep else dropped).append(line)
    if dropped:
        with (folder.path / "attempts.discarded.jsonl").open("a", encoding="utf-8") as stream:
            stream.write("\n".join(dropped) + "\n")
    try:
        write_atomically(folder.attempts_path, "".join(line + "\n" for line in kept))
    except OSError as exc:  # attempts.jsonl stays as it was
        raise folder_failure(exc, folder.path) from None
