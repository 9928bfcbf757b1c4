"""The three things an episode talks to, as protocols, and two ways of providing them.

The episode awaits `memory.retrieve(...)`, `drafter.propose(...)`, `evaluator.evaluate(...)`.
`InProcess` serves those awaits from plain objects in this process (sync methods run in a
worker thread so the event loop stays free); `RayActor` serves them from Ray actor handles.
The same episode code runs in both modes.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from actors.messages import (
    DraftRequest,
    Lesson,
    LessonRequest,
    Proposal,
    RefineRequest,
    Review,
    ReviewRequest,
)


class MemoryPort(Protocol):
    async def add(self, items: list[Any]) -> list[str]: ...
    async def retrieve(self, request: Any) -> Any: ...
    async def update(self, update: Any) -> Any: ...
    async def get(self, item_id: str) -> Any: ...
    async def children(self, item_id: str) -> list[Any]: ...
    async def api_items(self, backend: str, names: list[str]) -> list[Any]: ...


class WorkerPort(Protocol):
    async def propose(self, request: DraftRequest | RefineRequest) -> Proposal: ...
    async def lesson(self, request: LessonRequest) -> Lesson: ...
    async def review(self, request: ReviewRequest) -> Review: ...


class EvaluatorPort(Protocol):
    async def evaluate(self, task: Any, candidate: Any) -> Any: ...


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
            return await remote_method.remote(*args, **kwargs)

        return call
