"""The per-node gate of CPU device slots: the slots of a node share its cores, so timing
runs alone while verifications may run together."""

from __future__ import annotations

import asyncio
from contextlib import asynccontextmanager


class NodeGate:
    """Many verifications at once, or one timing run alone (writer-preferring)."""

    def __init__(self) -> None:
        self._readers = 0
        self._writer = False
        self._writers_waiting = 0
        self._changed = asyncio.Condition()

    @asynccontextmanager
    async def shared(self):  # noqa: ANN201
        async with self._changed:
            await self._changed.wait_for(lambda: not self._writer and not self._writers_waiting)
            self._readers += 1
        try:
            yield
        finally:
            async with self._changed:
                self._readers -= 1
                self._changed.notify_all()

    @asynccontextmanager
    async def exclusive(self):  # noqa: ANN201
        async with self._changed:
            self._writers_waiting += 1
            await self._changed.wait_for(lambda: not self._writer and not self._readers)
            self._writers_waiting -= 1
            self._writer = True
        try:
            yield
        finally:
            async with self._changed:
                self._writer = False
                self._changed.notify_all()


@asynccontextmanager
async def nothing():  # noqa: ANN201
    yield
