"""The three things an episode talks to, as protocols, and the ways of providing them.

The episode awaits `memory.retrieve(...)`, `drafter.propose(...)`, `evaluator.evaluate(...)`.
`InProcess` serves those awaits from plain objects in this process (sync methods run in a
worker thread so the event loop stays free); `RayActor` serves them from Ray actor handles;
`ResilientMemory` is the memory port of the Ray campaign (calls survive a memory actor
restart) and `PoolEvaluator` its evaluator port over the device pool. The same episode code
runs over all of them; launch/ only wires them.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import structlog

from actors.messages import (
    DraftRequest,
    Lesson,
    LessonRequest,
    Proposal,
    RefineRequest,
    Review,
    ReviewRequest,
)
from memory_actor.config import MemoryConfig
from memory_actor.items import MemoryItem
from memory_actor.messages import Retrieval, RetrievalRequest, UpdateAck, ValueUpdate
from npu_pool.tasks.spec import TaskSpec
from npu_pool.verdict import Candidate, Evaluation

log = structlog.get_logger("evokernel.ports")


class MemoryPort(Protocol):
    async def add(self, items: list[MemoryItem]) -> list[str]: ...
    async def retrieve(self, request: RetrievalRequest) -> Retrieval: ...
    async def update(self, update: ValueUpdate) -> UpdateAck | None: ...
    async def get(self, item_id: str) -> MemoryItem | None: ...
    async def children(self, item_id: str) -> list[MemoryItem]: ...
    async def api_items(self, backend: str, names: list[str]) -> list[MemoryItem]: ...


class WorkerPort(Protocol):
    async def propose(self, request: DraftRequest | RefineRequest) -> Proposal: ...
    async def lesson(self, request: LessonRequest) -> Lesson: ...
    async def review(self, request: ReviewRequest) -> Review: ...


class EvaluatorPort(Protocol):
    async def evaluate(self, task: TaskSpec, candidate: Candidate) -> Evaluation: ...


class InProcess:
    """Awaitable methods over a plain object: coroutines awaited, sync calls run in a thread."""

    def __init__(self, target: Any, *, offload: bool = True):
        self._target = target
        self._offload = offload
        # One call at a time: LanceDB tables and compilers are not shared between threads here.
        self._lock = asyncio.Lock()

    def __getattr__(self, name: str) -> Callable[..., Awaitable[Any]]:
        method = getattr(self._target, name)

        async def call(*args: Any, **kwargs: Any) -> Any:
            if inspect.iscoroutinefunction(method):
                return await method(*args, **kwargs)
            async with self._lock:
                if self._offload:
                    return await asyncio.to_thread(method, *args, **kwargs)
                return method(*args, **kwargs)

        return call


async def _remote(method: Any, *args: Any, **kwargs: Any) -> Any:
    """`await method.remote(...)`; a call cancelled because the episode's own Ray task is being
    cancelled (Ctrl-C, SIGTERM: Ray cancels the children too) is a cancellation here as well,
    not an error of the operator."""
    from ray.exceptions import TaskCancelledError

    try:
        return await method.remote(*args, **kwargs)
    except TaskCancelledError as exc:  # RayTaskError(TaskCancelledError) too: Ray derives it from the cause
        raise asyncio.CancelledError(str(exc).splitlines()[0] if str(exc) else "cancelled") from exc


class RayActor:
    """Awaitable methods over a Ray actor handle: `await port.m(x)` is `await handle.m.remote(x)`."""

    def __init__(self, handle: Any):
        self._handle = handle

    @property
    def handle(self) -> Any:
        return self._handle

    def __getattr__(self, name: str) -> Callable[..., Awaitable[Any]]:
        remote_method = getattr(self._handle, name)

        async def call(*args: Any, **kwargs: Any) -> Any:
            return await _remote(remote_method, *args, **kwargs)

        return call


class ResilientMemory:
    """The memory port over the named memory actor: a call that meets a dead or restarting actor
    is retried (the handle looked up again) until the actor is back; an update whose retrieval
    the restarted actor no longer knows is dropped with a warning."""

    def __init__(self, config: MemoryConfig, first_pause_s: float = 0.5):
        from memory_actor.actor_handle import get_or_create_memory_actor

        self._config, self._attempts, self._pause = config, config.actor_call_attempts, first_pause_s
        self._connect = get_or_create_memory_actor
        self._handle = get_or_create_memory_actor(config)

    def __getattr__(self, name: str) -> Callable[..., Awaitable[Any]]:
        from ray.exceptions import RayActorError

        async def call(*args: Any, **kwargs: Any) -> Any:
            pause = self._pause
            for attempt in range(1, self._attempts + 1):
                try:
                    return await _remote(getattr(self._handle, name), *args, **kwargs)
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
    """The evaluator port over the device pool actor (npu_pool.pools.DevicePoolActor)."""

    def __init__(self, pool: Any):
        self._pool = pool

    async def evaluate(self, task: TaskSpec, candidate: Candidate) -> Evaluation:
        # scrubbed again here: this process knows the LLM API key, the device actors do not
        return (await _remote(self._pool.evaluate, task, candidate)).scrubbed()
