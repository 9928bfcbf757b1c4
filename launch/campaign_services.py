"""What a concurrent campaign's episodes run on: the episode task, its ports, the run recorder.

Each operator's episode is a Ray task named `episode/<task id>` that may run on any node.
It reaches the memory actor through `ResilientMemory` (calls survive a memory actor restart),
the device pools through `PoolEvaluator`, the drafter and refiner actors through plain
ports, and streams every attempt to the run recorder (`run/<run id>`), the single writer of
attempts.jsonl, which lives on the driver's node and keeps the live counters and metrics.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import ray
import structlog
from pydantic import BaseModel, ConfigDict
from ray.exceptions import RayActorError

from actors.messages import Attempt, EpisodeResult
from launch.metrics import CampaignCounters, RayCampaignMetrics
from npu_pool.tasks import TaskSpec
from npu_pool.verdict import Candidate, Evaluation

log = structlog.get_logger("evokernel.campaign")


class EpisodeServices(BaseModel):
    """Handles an episode task needs, shipped with it."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    memory_config: Any  # memory_actor.config.MemoryConfig
    pool: Any
    drafter: Any
    refiner: Any
    recorder: Any


class EpisodeOutcome(BaseModel):
    """What an episode task returns: its result, where it ran, and whether the campaign must react."""

    result: EpisodeResult
    node_id: str
    fatal: str | None = None  # the LLM configuration is wrong (key, model): stop the campaign
    llm_lost: bool = False  # the endpoint stopped answering through all retries


class ResilientMemory:
    """The memory port over the named actor: a call that meets a dead or restarting actor is
    retried (with the handle looked up again) until the actor is back; an update whose
    retrieval the restarted actor no longer knows is dropped with a warning."""

    def __init__(self, config: Any, attempts: int = 8, first_pause_s: float = 0.5):
        from memory_actor.actor import get_or_create_memory_actor

        self._config, self._attempts, self._pause = config, attempts, first_pause_s
        self._connect = get_or_create_memory_actor
        self._handle = get_or_create_memory_actor(config)

    def __getattr__(self, name: str) -> Any:
        async def call(*args: Any, **kwargs: Any) -> Any:
            pause = self._pause
            for attempt in range(1, self._attempts + 1):
                try:
                    return await getattr(self._handle, name).remote(*args, **kwargs)
                except KeyError as exc:  # Ray re-raises the actor's KeyError as a KeyError subclass
                    if name != "update":
                        raise
                    log.warning("memory_update_dropped", reason=str(exc)[:200])
                    return None
                except RayActorError as exc:
                    if attempt == self._attempts:
                        raise
                    log.warning("memory_actor_unavailable", call=name, attempt=attempt, error=str(exc)[:200])
                    await asyncio.sleep(pause)
                    pause = min(pause * 2, 10.0)
                    self._handle = self._connect(self._config)
            raise AssertionError("unreachable")

        return call


class PoolEvaluator:
    """The evaluator port over the device pool actor."""

    def __init__(self, pool: Any):
        self._pool = pool

    async def evaluate(self, task: TaskSpec, candidate: Candidate) -> Evaluation:
        return await self._pool.evaluate.remote(task, candidate)


class WorkerPort:
    """propose / lesson / review over a drafter or refiner actor handle."""

    def __init__(self, handle: Any):
        self._handle = handle

    def __getattr__(self, name: str) -> Any:
        async def call(*args: Any, **kwargs: Any) -> Any:
            return await getattr(self._handle, name).remote(*args, **kwargs)

        return call


class RunRecorder:
    """`run/<run id>`: appends attempts (fsynced) and keeps the campaign's counters and metrics."""

    def __init__(self, run_dir: str, run_id: str, planned: int):
        from launch.campaign import RunFolder

        self.folder = RunFolder(Path(run_dir))
        self.counters = CampaignCounters(planned=planned)
        self.partial: dict[str, EpisodeResult] = {}
        self.metrics = RayCampaignMetrics(run_id)
        self.run_id = run_id
        self.metrics.on_counters(self.counters)

    def __repr__(self) -> str:
        return f"run/{self.run_id}"

    def append(self, attempt: Attempt) -> None:
        self.folder.append_attempt(attempt)
        self.counters.add_attempt(attempt)
        self.metrics.on_attempt(attempt)
        self._fold(attempt)

    def _fold(self, attempt: Attempt) -> None:
        """The operator's result so far, for one interrupted before it could report."""
        self.partial.setdefault(attempt.task, EpisodeResult(task=attempt.task)).record(attempt)

    def partial_result(self, task: str) -> EpisodeResult:
        return self.partial.get(task, EpisodeResult(task=task)).model_copy()

    def operator_done(self, result: EpisodeResult) -> None:
        self.counters.add_result(result)
        self.metrics.on_counters(self.counters)

    def set_running(self, running: int) -> CampaignCounters:
        self.counters.running = running
        self.metrics.on_counters(self.counters)
        return self.counters

    def node_id(self) -> str:
        return ray.get_runtime_context().get_node_id()


async def _episode(task_path: str, settings: Any, backend_name: str, run_id: str,
                   services: EpisodeServices) -> EpisodeOutcome:
    from actors.briefing import candidate_format_for, task_brief
    from actors.episode import Episode
    from actors.llm_client import LLMUnreachable
    from npu_pool.backends import get_backend
    from npu_pool.tasks import load_task

    node_id = ray.get_runtime_context().get_node_id()
    harness = settings.harness
    try:
        task = load_task(Path(task_path), sizes=harness.sizes, max_bytes=harness.fit_max_bytes,
                         max_gflop=harness.fit_max_gflop, min_dim=harness.fit_min_dim)
    except Exception as exc:  # a broken task file is that operator's failure only
        return EpisodeOutcome(result=EpisodeResult(task=Path(task_path).stem, stopped_by="error",
                                                   error=f"task load: {exc}"), node_id=node_id)
    backend = get_backend(backend_name)
    fmt = candidate_format_for(settings.llm, backend, task)
    appended: list[Any] = []
    episode = Episode(
        task=task, brief=task_brief(task, backend, fmt), memory=ResilientMemory(services.memory_config),
        drafter=WorkerPort(services.drafter), refiner=WorkerPort(services.refiner),
        evaluator=PoolEvaluator(services.pool), config=settings.episode, run_id=run_id,
        items_per_prompt=settings.memory.items_per_prompt,
        on_attempt=lambda attempt: appended.append(services.recorder.append.remote(attempt)),
    )
    log.info("operator_start", task=task.task_id, format=fmt, node=node_id[:8], pid=os.getpid())
    outcome = EpisodeOutcome(result=episode.result, node_id=node_id)
    try:
        outcome.result = await episode.run()
    except LLMUnreachable as exc:
        outcome.llm_lost = True
        outcome.result = episode.result.model_copy(update={"error": f"LLM endpoint lost: {exc}", "stopped_by": "error"})
    except Exception as exc:  # LLMAuthError, LLMModelNotFound: the configuration, not this operator
        outcome.fatal = str(exc)
        outcome.result = episode.result.model_copy(update={"error": str(exc), "stopped_by": "error"})
    await asyncio.gather(*appended)  # every attempt is on disk before the driver hears of the result
    return outcome


async def _with_wakeups(coroutine: Any) -> Any:
    """Ray cancels a task by interrupting its main thread, which Python notices only between
    bytecodes: a short heartbeat keeps the event loop waking up so cancellation is prompt."""
    async def heartbeat() -> None:
        while True:
            await asyncio.sleep(0.2)

    beat = asyncio.ensure_future(heartbeat())
    try:
        return await coroutine
    finally:
        beat.cancel()


@ray.remote(num_cpus=0, max_retries=0)
def run_episode(task_path: str, settings: Any, backend_name: str, run_id: str,
                services: EpisodeServices) -> EpisodeOutcome:
    """One operator's episode as a Ray task (not retried: an attempt is not idempotent)."""
    from launch.logging import configure_logging

    key = settings.llm.api_key.get_secret_value() if settings.llm.api_key else None
    configure_logging(settings.log_json if settings.log_json is not None else True, settings.log_level,
                      secrets=[key] if key else [])
    return asyncio.run(_with_wakeups(_episode(task_path, settings, backend_name, run_id, services)))
