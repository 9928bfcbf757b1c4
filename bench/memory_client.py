"""MemoryClient: a per-process front of the memory actor that coalesces value updates, used by
the memory benchmark (bench/memory.py) to measure the actor's batched update path.

One Ray call costs about a millisecond of CPU across caller, raylet and actor, which caps a
single actor near 1,500 calls per second on a small machine. Writers in one process share a
client; it sends their updates as one `MemoryActor.update_batch` call per short linger window,
keeping the actor's order (list order within a batch, send order across batches) and
acknowledging each update with its own future once the batch is durable.

Campaigns do not use it: they send one update per attempt (actors.ports.ResilientMemory), far
below the rate where batching pays.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future
from typing import Any

import ray

from memory_actor.messages import Retrieval, RetrievalRequest, UpdateAck, ValueUpdate


class MemoryClient:
    def __init__(self, actor: Any, max_batch: int = 512, linger_ms: float = 2.0, max_in_flight: int = 8):
        self.actor = actor
        self.max_batch = max_batch
        self.linger_s = linger_ms / 1000
        self._queue: list[tuple[ValueUpdate, Future[UpdateAck]]] = []
        self._ready = threading.Condition()
        self._slots = threading.BoundedSemaphore(max_in_flight)
        self._closed = False
        self._sender = threading.Thread(target=self._send_loop, name="memory-client", daemon=True)
        self._sender.start()

    # -- pass-through calls ----------------------------------------------------------------------
    def retrieve(self, request: RetrievalRequest) -> Retrieval:
        return ray.get(self.actor.retrieve.remote(request))

    # -- batched updates ---------------------------------------------------------------------------
    def update(self, update: ValueUpdate) -> Future[UpdateAck]:
        """Queue an update; ignore the future for fire-and-forget, or wait on it for the durable ack."""
        future: Future[UpdateAck] = Future()
        with self._ready:
            if self._closed:
                raise RuntimeError("MemoryClient is closed")
            self._queue.append((update, future))
            self._ready.notify()
        return future

    def _send_loop(self) -> None:
        while True:
            with self._ready:
                while not self._queue and not self._closed:
                    self._ready.wait()
                if not self._queue and self._closed:
                    return
                deadline = time.monotonic() + self.linger_s  # let concurrent callers join the batch
                while len(self._queue) < self.max_batch and not self._closed:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        break
                    self._ready.wait(remaining)
                batch, self._queue = self._queue[: self.max_batch], self._queue[self.max_batch :]
            self._slots.acquire()
            try:
                reply = self.actor.update_batch.remote([update for update, _ in batch]).future()
            except BaseException as exc:
                self._slots.release()
                for _, future in batch:
                    future.set_exception(exc)
                continue
            reply.add_done_callback(lambda done, batch=batch: self._resolve(done, batch))

    def _resolve(self, done: Future, batch: list[tuple[ValueUpdate, Future[UpdateAck]]]) -> None:
        self._slots.release()
        try:
            acks = done.result()
        except BaseException as exc:
            for _, future in batch:
                future.set_exception(exc)
            return
        for (_, future), ack in zip(batch, acks, strict=True):
            if ack.error:
                future.set_exception(KeyError(ack.error))
            else:
                future.set_result(ack)

    def close(self) -> None:
        """Send what is queued and stop the sender (queued futures still resolve)."""
        with self._ready:
            self._closed = True
            self._ready.notify()
        self._sender.join()
