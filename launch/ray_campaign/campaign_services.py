"""What a concurrent campaign's episodes run on: the episode task, its ports, the run recorder.

Each operator's episode is a Ray task named `episode/<task id>` that may run on any node.
It is built by actors.episode_factory like the single-process campaign's, and reaches the
memory actor through `ResilientMemory` (calls survive a memory actor restart), the device
pools through `PoolEvaluator`, the drafter and refiner actors through `RayActor` (all in
actors/ports.py), and streams every attempt to the run recorder (`run/<run id>`,
launch/ray_campaign/run_recorder.py), the single writer of attempts.jsonl, which lives on the driver's node
and keeps the live counters and metrics.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

import ray
import structlog
from pydantic import BaseModel, ConfigDict
from ray.actor import ActorHandle

from actors.episode_factory import EpisodeEnd
from actors.episode_turns import EpisodeState, restore, suspend
from actors.messages import EpisodeResult
from actors.ports import PoolEvaluator, RayActor, ResilientMemory
from launch.infra_attempts import with_unjudged_attempts
from launch.kernel_files import kernel_task
from launch.run_summary import INTERRUPTED
from memory_actor.config import MemoryConfig

log = structlog.get_logger("evokernel.campaign")


class EpisodeServices(BaseModel):
    """Handles an episode task needs, shipped with it."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    memory_config: MemoryConfig
    pool: ActorHandle  # pool/evaluator (npu_pool.pools.DevicePoolActor)
    drafter: ActorHandle  # drafter/<run id>/<i> (actors.drafter.DrafterActor)
    refiner: ActorHandle
    recorder: ActorHandle  # run/<run id> (launch.ray_campaign.run_recorder.RunRecorder)


class EpisodeOutcome(EpisodeEnd):
    """What an episode task returns: how it ended (actors.episode_factory.EpisodeEnd), where it ran, and
    with a time budget, the episode's state after its turn (actors/episode_turns.py)."""

    node_id: str
    state: EpisodeState | None = None


async def _episode(task_path: str, settings: Any, backend_name: str, run_id: str,
                   services: EpisodeServices, state: EpisodeState | None = None, pace: Any = None) -> EpisodeOutcome:
    from actors.episode_factory import build_episode, run_to_end
    from npu_pool.backends import get_backend

    node_id = ray.get_runtime_context().get_node_id()
    appended: list[Any] = []
    episode = build_episode(
        task_path, settings, get_backend(backend_name), memory=ResilientMemory(services.memory_config),
        drafter=RayActor(services.drafter), refiner=RayActor(services.refiner),
        evaluator=PoolEvaluator(services.pool), run_id=run_id,
        on_attempt=lambda attempt: appended.append(services.recorder.append.remote(attempt)))
    if isinstance(episode, EpisodeResult):  # the task file did not load
        return EpisodeOutcome(result=episode, node_id=node_id)
    if state is not None:  # a later turn (launch/budget.py): it goes on where its last turn ended
        restore(episode, state)
    else:  # What the run folder's kernels/ needs of the task (signature, reference), before any attempt.
        appended.append(services.recorder.operator_started.remote(
            kernel_task(episode.task, backend_name, episode.brief.candidate_format)))
    episode.pace = pace
    log.info("operator_start", task=episode.brief.task_id, format=episode.brief.candidate_format,
             node=node_id[:8], pid=os.getpid(), turn=state.turns + 1 if state else 1)
    try:
        end = await run_to_end(episode)
    except (asyncio.CancelledError, KeyboardInterrupt):  # the campaign cancelled this task (Ctrl-C, SIGTERM)
        end = EpisodeEnd(result=episode.result.model_copy(update={"stopped_by": INTERRUPTED, "error": INTERRUPTED}))
    await asyncio.gather(*appended)  # every attempt is on disk before the driver hears of the result
    result = with_unjudged_attempts(end.result, episode.attempts)  # attempts the machine stopped: not judged
    turns = (state.turns if state else 0) + 1
    return EpisodeOutcome(result=result, node_id=node_id, fatal=end.fatal, llm_lost=end.llm_lost,
                          state=suspend(episode, turns) if pace is not None else None)


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
                services: EpisodeServices, state: EpisodeState | None = None, pace: Any = None) -> EpisodeOutcome:
    """One operator's episode as a Ray task (not retried: an attempt is not idempotent)."""
    from launch.logging import configure_logging

    key = settings.llm.api_key.get_secret_value() if settings.llm.api_key else None
    configure_logging(settings.log_json if settings.log_json is not None else True, settings.log_level,
                      secrets=[key] if key else [])
    return asyncio.run(_with_wakeups(_episode(task_path, settings, backend_name, run_id, services, state, pace)))
