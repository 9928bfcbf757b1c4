"""The concurrent campaign: every operator of a suite as a Ray task, bounded and streamed.

The driver keeps at most `ray.max_in_flight` episodes running (the next operator starts
when one finishes), all sharing one memory actor, one device pool (npu_pool.pools) and
LLM worker pools sized by the LLM concurrency. Attempts stream to RUN_DIR/attempts.jsonl
through the run recorder; summary.json lists the planned operators from the start and is
rewritten atomically after each one finishes. Ctrl-C cancels the episodes in flight, keeps
what they did (marked `interrupted`) and flushes everything; `resume()` continues a run
folder without redoing finished operators. A lost LLM endpoint fails the operator that met
it, pauses new starts until the endpoint answers again, and stops the campaign if it stays
away (the rest can be resumed later). An operator lost with its node is run again on the nodes
that remain, once (launch.ray_campaign.lost_operators), else reported as infrastructure. SIGTERM stops the run as Ctrl-C does where the caller
made it so (`evokernel run` does; launch.ray_campaign.ray_session keeps that handler over Ray's), also when
the signal reaches Ray's own processes as well. The status line and the notes above it (LLM
retries, waits) are launch.ray_campaign.campaign_progress's; the memory actor, the run recorder and the LLM
workers are started and stopped by launch.ray_campaign.campaign_actors; how it stops (a Ctrl-C, the
head lost) is launch.ray_campaign.campaign_stops's.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import ray
import structlog

from actors.episode_factory import INFRA
from actors.errors import error_line, error_message
from actors.llm_client import wait_for_endpoint
from actors.messages import EpisodeResult, utc_now
from launch.budget import BUDGET, SUSPENDED, Turn, TurnQueue
from launch.campaign import (
    CampaignError,
    RunFolder,
    RunFolderWriteFailed,
    discard_attempts,
    new_run_id,
    resume_plan,
    run_summary,
)
from launch.config import Settings
from launch.ray_campaign.campaign_actors import BankRefused, CampaignActors, cluster_settings
from launch.ray_campaign.campaign_progress import CtrlCRequestsStop, LLMRetryNotes, ProgressDisplay
from launch.ray_campaign.campaign_services import EpisodeOutcome, EpisodeServices
from launch.ray_campaign.campaign_stops import RAY_HEAD_LOST, CampaignStops
from launch.ray_campaign.lost_operators import (
    LOST,
    LOST_RETRIES,
    LostOperators,
    ended_by_a_loss,
    lost_with_its_node,
)
from launch.ray_campaign.ray_session import GcsWatch, RayProcesses, connect_ray
from launch.ray_campaign.roles import ROLES, Role, device_roles
from launch.run_summary import INTERRUPTED, Placement, RunSummary
from launch.stop_shield import LateStops
from npu_pool.backends import timing_kind
from npu_pool.devices import FakeDevices
from npu_pool.pools import DevicePools, PoolError
from npu_pool.sandbox.host_memory import oom_kill_line, oom_kills

log = structlog.get_logger("evokernel.campaign")


class ConcurrentCampaign(CampaignStops):
    """One campaign over Ray: `run(task_paths)` returns the final summary."""

    def __init__(self, settings: Settings, run_dir: Path, *, run_id: str | None = None,
                 fake: FakeDevices | None = None, cpus_per_slot: float = 1.0, max_devices: int | None = None,
                 progress: ProgressDisplay | None = None, llm_wait_s: float | None = None,
                 lost_retries: int = LOST_RETRIES):
        self.settings = settings
        self.folder = RunFolder(Path(run_dir).resolve())
        self.run_id = run_id or new_run_id()
        self.fake, self.cpus_per_slot, self.max_devices = fake, cpus_per_slot, max_devices
        self.progress = progress or ProgressDisplay()
        self.llm_wait_s = settings.llm.endpoint_wait_s if llm_wait_s is None else llm_wait_s
        self.started_at = utc_now()
        self.planned: list[Path] = []
        self.operators: list[EpisodeResult] = []
        self.episode_nodes: dict[str, str] = {}
        self.devices: list[dict[str, Any]] = []
        self.error: str | None = None
        self.interrupted = False
        self.resumed: list[str] = []
        self._stop_requested = False
        self._head_lost = False  # the cluster's GCS stopped answering (its head killed, its node gone)
        self._folder_broken = False  # a write to the run folder failed (a full disk): summary.json may be stale
        self._watching = False  # the GCS watch may interrupt the main thread (start-up and the loop)
        self._ended = False  # the final summary is written
        self.ray_processes: RayProcesses | None = None  # those of the Ray instance this campaign started
        self.actors = CampaignActors(self.run_id)  # the memory actor, run recorder, LLM workers
        self.timings: dict[str, float] = {}
        self._llm_lost = False  # the last finished episode lost the LLM endpoint
        self._recorder_lost = False  # a call to the run recorder went unanswered while stopping
        self._retries = LLMRetryNotes(self.progress)  # the LLM workers' endpoint-fault retries, each said once
        self.lost = LostOperators(lost_retries)
        self.turns: TurnQueue | None = None  # the operators to run, in turns with a time budget (launch/budget.py)
        self.budget_before: dict[str, Any] | None = None  # a resumed run's budget so far
        self._turn_of: dict[Any, Turn] = {}  # episode task -> the turn it runs
        self._oom_kills = oom_kills()[0]  # the OOM killer's count in our cgroup: a lost worker's cause

    # -- summary ----------------------------------------------------------------------------

    def summary(self, finished: bool) -> RunSummary:
        return run_summary(self, "ray", finished, timings=self.timings, lost_tries=self.lost.tries,
                           placement=Placement(episodes=self.episode_nodes, devices=self.devices))

    def _write(self, finished: bool = False) -> None:
        """summary.json; one that cannot be written (a full disk) stops the run, resumable."""
        try:
            self.folder.write_summary(self.summary(finished))
        except RunFolderWriteFailed as exc:
            self._folder_failed(str(exc))

    def _folder_failed(self, line: str) -> None:
        self._folder_broken = True  # summary.json on disk may be older than the run: the end raises the error
        if self.error is None:
            log.error("run_folder_write_failed", error=line)
            self.error = line

    def request_stop(self) -> None:
        """Stop as Ctrl-C does (for callers that are not the main thread)."""
        self._stop_requested = True

    # -- the run ----------------------------------------------------------------------------

    def run(self, task_paths: list[Path]) -> dict[str, Any]:
        """Run the operators not finished yet; returns the final summary as summary.json holds it."""
        self.planned = self.planned or list(task_paths)
        # The operators not finished (a resumed run's budget-stopped ones continue from their state)
        todo = self.turns = TurnQueue.of(self, task_paths)
        done = {op.task for op in self.operators}
        self._write()
        if self.error:  # the run folder cannot be written (a full disk): nothing started yet
            raise CampaignError(self.error)
        clock = time.monotonic()
        started_ray = connect_ray(self.settings, self.fake, job_name=f"evokernel run {self.run_id}")
        if started_ray:
            self.ray_processes = RayProcesses()
            self.ray_processes.note()
        watch = GcsWatch(self._head_gone).start()
        self._watching = True
        pools = None
        try:
            pools = DevicePools(self.settings.harness, device_roles(), fake=self.fake, cpus_per_slot=self.cpus_per_slot,
                                max_devices=self.max_devices).start()
            self.settings = cluster_settings(self.settings)
            try:
                services = self.actors.start(self.settings, pools, self.folder.path, len(self.planned))
            except CampaignError as exc:  # the memory actor did not start (BankRefused: another writer)
                self.error = self.error or str(exc)
                raise
            log.info("campaign_start", run_id=self.run_id, operators=len(todo), finished_before=len(done),
                     devices=[v.device for v in pools.verifiers], backend=pools.evaluating_backend,
                     max_in_flight=self.settings.ray.max_in_flight, run_dir=str(self.folder.path))
            self.timings["startup_s"] = round(time.monotonic() - clock, 2)  # Ray, pools, memory, LLM workers
            clock = time.monotonic()
            self._loop(todo, pools, self.actors.recorder, services)
            self.timings["episodes_s"] = round(time.monotonic() - clock, 2)
        except PoolError as exc:
            self.error = self.error if self._head_lost else str(exc)
            raise CampaignError(self.error) from None
        except BankRefused:
            self.actors.memory = None  # nothing of ours to flush
            raise
        except KeyboardInterrupt:  # Ctrl-C or SIGTERM before the episodes started (the loop has its own)
            if not self._head_lost:
                log.warning("campaign_interrupted", in_flight=0, not_started=len(todo))
                self.interrupted = True
        except Exception as exc:
            if not self._head_lost:
                raise
            log.error("ray_head_lost_at_start", error=error_line(exc))  # the head went: Ray's calls failed
        finally:
            self._watching = False
            watch.stop()
            self.progress.clear()
            self._finish(pools, started_ray)
        summary = self.summary(True)
        log.info("campaign_done", run_id=self.run_id, interrupted=self.interrupted, error=self.error,
                 feasible=summary.totals.feasible, operators=summary.totals.operators)
        if self._head_lost or self._folder_broken:
            # a resumable stop: `evokernel run` says so, with the resume command, exit 1; also where
            # summary.json could not take the error itself (a full run folder: the file on disk is older).
            # Other errors (a lost LLM endpoint) are in the summary returned and written.
            raise CampaignError(self.error or RAY_HEAD_LOST)
        return summary.model_dump(mode="json")

    def _finish(self, pools: DevicePools | None, started_ray: bool) -> None:
        """Flush the memory, write the final summary, then tear down (launch.ray_campaign.campaign_actors): the
        summary comes before the teardown, whose calls may block when the GCS is gone."""
        if self.ray_processes is not None:  # the workers now, before the teardown ends them: a run shorter
            self.ray_processes.note()       # than the loop's 10 s between looks left their groups behind
        devices, flush_failed, stopped = self.actors.flush(pools)
        self.devices = self.devices if devices is None else devices
        self.error = self.error or flush_failed
        self.interrupted = (self.interrupted or stopped) and not self._head_lost  # a stop during the flush: said
        self._write(finished=True)
        self._ended = True
        late = LateStops()  # the summary is written: a stop now is noted, and the teardown finishes (Ray's
        late.ignore()       # processes cut short were left to its atexit, after the run's last sweep)
        try:
            self.actors.stop(pools, started_ray)
        except KeyboardInterrupt:  # a stop during the teardown: the summary is written, Ray's atexit ends the rest
            log.warning("stop_during_teardown")
        finally:
            late.restore()
        if self.ray_processes is not None:  # the raylet's agents outlived abnormal ends (issue 63)
            if ended := self.ray_processes.end_survivors():
                log.warning("ray_processes_ended", processes=ended)

    def _loop(self, todo: TurnQueue, pools: DevicePools, recorder: Any, services: EpisodeServices) -> None:
        in_flight = self.settings.ray.max_in_flight
        self.progress.note(todo.line(in_flight=in_flight), fault=False)  # operators left, attempts planned, the end estimate
        self.progress.suffix = lambda counters: todo.line(in_running=counters.running, in_flight=in_flight,
                                                          walls=counters.walls)
        with CtrlCRequestsStop(self):
            self._run_episodes(todo, pools, recorder, services)
        for result in todo.left_at_the_end(BUDGET if todo.out_of_budget else SUSPENDED):  # a resume continues them
            self.operators.append(result)
            self._recorded(recorder.operator_done.remote(result), None)
        self._write()
        if (bought := todo.bought(self.operators, f"evokernel run --resume {self.folder.path}")) is not None:
            self.progress.note(bought, fault=False)

    def _run_episodes(self, todo: TurnQueue, pools: DevicePools, recorder: Any, services: EpisodeServices) -> None:
        pending: dict[Any, Path] = {}
        drafters, refiners = self.actors.drafters, self.actors.refiners
        submitted = 0
        next_note = time.monotonic()
        try:
            while (todo and not self.error) or pending or (self.lost.waiting and not self.error):
                while todo and len(pending) < self.settings.ray.max_in_flight and not self.error:
                    if self._stop_requested:
                        raise KeyboardInterrupt
                    turn = todo.popleft()
                    if turn is None:  # the time budget is spent
                        break
                    path = turn.path
                    mine = services.model_copy(update={"drafter": drafters[submitted % len(drafters)],
                                                       "refiner": refiners[submitted % len(refiners)]})
                    submitted += 1
                    ref = ROLES[Role.EPISODE].remote(task=path.stem).remote(
                        str(path.resolve()), self.settings, pools.evaluating_backend, self.run_id, mine,
                        turn.state, turn.pace)
                    pending[ref] = path
                    self._turn_of[ref] = turn
                ready = ray.wait(list(pending), num_returns=1, timeout=1.0)[0] if pending else []
                for ref in ready:
                    path = pending.pop(ref)
                    if self._finished(path, ref, recorder, may_run_again=True):
                        self.lost.waiting.append(path)
                    if self.error is None and self._llm_lost:
                        self._wait_for_llm()
                if self._stop_requested:
                    raise KeyboardInterrupt
                # Lost operators run again, next, once every LLM worker answers (one that went
                # with the node answers when Ray has restarted it elsewhere).
                todo.extendleft(reversed(self.lost.release(self._retries.poll(drafters + refiners))))
                if not pending and self.lost.waiting:
                    time.sleep(1.0)
                self.progress.show(self._recorded(recorder.set_running.remote(len(pending)), None))
                if self.ray_processes is not None and time.monotonic() >= next_note:
                    self.ray_processes.note()  # Ray's agents and workers, while they are ours to see
                    next_note = time.monotonic() + 10.0
            self._not_run_again(recorder, interrupted=False)
            if self.error and pending:
                self._cancel(pending, recorder)
            self._retries.poll(drafters + refiners)  # those of the last moments too
        except KeyboardInterrupt:
            self.progress.clear()
            if self._head_lost:  # not a stop: what was in flight is the infrastructure's, resumable
                log.error("campaign_stopped", reason=self.error, in_flight=len(pending), not_started=len(todo))
                self._not_run_again(recorder, interrupted=False)
                self._without_head(pending, recorder)
            else:
                log.warning("campaign_interrupted", in_flight=len(pending), not_started=len(todo))
                self.interrupted = True
                self._not_run_again(recorder, interrupted=True)
                self._cancel(pending, recorder)
        counters = self._recorded(recorder.set_running.remote(0), None)
        if counters is not None:
            self.progress.show(counters, force=True)

    def _finished(self, path: Path, ref: Any, recorder: Any, may_run_again: bool = False) -> bool:
        """Record how the operator's episode ended; True when it was lost and is to run again."""
        lost: str | None = None  # what the episode lost: its node, its process or an actor it used
        turn, state = self._turn_of.pop(ref, None), None
        try:
            outcome: EpisodeOutcome = ray.get(ref)
            result, state = outcome.result, outcome.state
            self.episode_nodes[result.task] = outcome.node_id
            if outcome.fatal:
                self.error = outcome.fatal
            self._llm_lost = outcome.llm_lost
            lost = result.error if ended_by_a_loss(result) else None
        except ray.exceptions.TaskCancelledError:
            result = self._partial(recorder, path, stopped_by=INTERRUPTED, error=INTERRUPTED)
        except RunFolderWriteFailed as exc:  # the recorder could not append an attempt: a full disk
            self._folder_failed(error_message(exc))
            result = self._partial(recorder, path, stopped_by=INFRA, error=error_message(exc))
        except Exception as exc:  # the episode's worker, node or an actor it used died, or the episode failed
            log.error("episode_task_failed", task=path.stem, error=str(exc))  # the whole traceback, in the log
            lost = error_line(exc) if lost_with_its_node(exc) else None
            result = self._partial(recorder, path, stopped_by="error", error=f"episode task failed: {error_line(exc)}")
        if lost is not None:
            if (oom := oom_kill_line(self._oom_kills)) is not None:  # not Ray: the machine's memory limit
                self._oom_kills = oom_kills()[0]
                lost = f"{lost}; {oom}"
            if self.lost.run_again(path.stem, lost) and may_run_again and not self.error:
                self.progress.note(f"{path.stem} was lost with its node, running it again: {lost}")
                return True
            # not a verdict on the operator: infrastructure, and a resume runs it again
            result = result.model_copy(update={"stopped_by": INFRA, "error": f"{LOST}: {lost}"})
        if turn is not None and self.turns is not None and self.turns.returned(turn, result, state):
            return False  # moved down: it waits for its next turn (launch/budget.py)
        self.operators.append(result)
        self._recorded(recorder.operator_done.remote(result), None)
        self._write()
        self.progress.clear()
        log.info("operator_done", task=result.task, feasible=result.feasible, speedup_vs_eager=result.speedup_vs_eager,
                 timing=timing_kind(self.settings.harness.backend), attempts=result.attempts,
                 usage=f"{result.tokens} tok", error=result.error)
        return False

    def _wait_for_llm(self) -> None:
        """Hold new starts until the endpoint answers again; stop the campaign if it does not
        (the single-process campaign's policy too: actors.llm_client.wait_for_endpoint)."""
        if wait_for_endpoint(self.settings.llm.base_url, self.llm_wait_s, say=self.progress.note):
            self._llm_lost = False
            return
        self.error = f"the LLM endpoint {self.settings.llm.base_url} did not come back within {self.llm_wait_s:.0f} s"

    # -- resuming ---------------------------------------------------------------------------

    @classmethod
    def resume(cls, settings: Settings, run_dir: Path, **kwargs: Any) -> tuple[ConcurrentCampaign, list[Path]]:
        """A campaign that continues RUN_DIR: finished operators are kept, the others run again
        (their earlier attempts move to attempts.discarded.jsonl), with the same run id."""
        summary, paths, kept = resume_plan(run_dir, settings)
        campaign = cls(settings, run_dir, run_id=summary.run_id, **kwargs)
        campaign.started_at = summary.started_at or campaign.started_at
        campaign.planned, campaign.operators = paths, kept
        campaign.episode_nodes = dict(summary.placement.episodes)
        campaign.lost = LostOperators(campaign.lost.retries, summary.lost_tries)
        campaign.resumed = [*summary.resumed_at, utc_now()]
        campaign.budget_before = summary.budget
        discard_attempts(campaign.folder, {op.task for op in kept})
        log.info("campaign_resume", run_id=campaign.run_id, finished=len(kept), remaining=len(paths) - len(kept))
        return campaign, paths
