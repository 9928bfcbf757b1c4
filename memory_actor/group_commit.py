"""The memory actor's durable writes: value updates and retrieval contexts, group-committed.

Every queued log row is appended in one LanceDB write per window by a background task, which
then releases the callers waiting for their acknowledgement; a fold (changed values merged into
the items table, the log trimmed) runs in the background beside it. A write that keeps failing
for memory.write_give_up_s (or hangs that long) ends the writing: the callers waiting, and every
later call that writes, get BankWriteFailed in one line. The actor (memory_actor.actor) stages
the changes on the bank and awaits `until_durable`; both take the two locks below around I/O.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections.abc import Callable
from typing import Any

import structlog

from memory_actor.bank import MemoryBank
from memory_actor.bank_errors import BankWriteFailed, bank_place, write_failure
from memory_actor.config import MemoryConfig
from memory_actor.journal import FoldJob

log = structlog.get_logger("evokernel.memory.actor")


class GroupCommit:
    """The durable writes of one memory actor over `bank()` (the actor's bank, or its refusal)."""

    def __init__(self, config: MemoryConfig, bank: Callable[[], MemoryBank], metrics: Any):
        self.config = config
        self._bank = bank
        self._metrics = metrics  # the actor's (memory_actor.actor.ActorMetrics): flush_ms, log_rows
        self.log_lock = asyncio.Lock()  # the log table: appends, trims
        self.items_lock = asyncio.Lock()  # the items and meta tables: adds, folds
        self._folder: asyncio.Task[None] | None = None
        self.work = asyncio.Event()
        self._urgent = asyncio.Event()  # a caller waits for durability
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []
        self._flusher: asyncio.Task[None] | None = None
        self.write_failure: BankWriteFailed | None = None  # the bank cannot be written: why
        self._failing_since: float | None = None
        self.trouble: BankWriteFailed | None = None  # the last failed write's line, while retrying
        self._fold_failed_said = -math.inf

    @property
    def bank(self) -> MemoryBank:
        return self._bank()

    def kick(self) -> None:
        if self.write_failure is not None:
            return  # nothing more is written (_gave_up)
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.get_running_loop().create_task(self._flush_loop())
        self.work.set()

    async def _flush_loop(self) -> None:
        while True:
            await self.work.wait()
            self.work.clear()
            if not self._waiters and len(self.bank.pending) < self.config.flush_max_rows:
                # Only retrieval contexts queued and nobody waits for an ack: write them lazily.
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._urgent.wait(), self.config.context_flush_ms / 1000)
            if len(self.bank.pending) < self.config.flush_max_rows:
                await asyncio.sleep(self.config.flush_interval_ms / 1000)  # gather a group
            self._urgent.clear()
            try:
                await self.flush_once()
                self._failing_since = self.trouble = None
            except Exception as exc:  # the rows went back to the queue: retried, for a while
                if self._gave_up(exc):
                    return
                await asyncio.sleep(1.0)
                self.work.set()

    def _gave_up(self, exc: Exception) -> bool:
        """A failed log write: the first is logged with its traceback, later ones not at all;
        once writes have failed for memory.write_give_up_s (or one hung that long) the actor
        stops writing: the callers waiting for an acknowledgement get BankWriteFailed, one line
        naming the cause, and so does every later call that writes (the campaign stops with its
        resume command)."""
        if self.write_failure is not None:
            return True
        failure = write_failure(exc, self.config.uri) if not isinstance(exc, TimeoutError) else BankWriteFailed(
            f"the memory bank {bank_place(self.config.uri)} cannot be written: a write did not return within "
            f"{self.config.write_give_up_s:.0f} s (a stalled file system?)")
        now = time.monotonic()
        if self._failing_since is None:
            self._failing_since = now
            log.warning("memory log write failed; retrying", reason=str(failure),
                        give_up_s=self.config.write_give_up_s, exc_info=exc)
        self.trouble = failure
        if not isinstance(exc, TimeoutError) and now - self._failing_since < self.config.write_give_up_s:
            return False
        self.stop_writing(failure)
        return True

    def stop_writing(self, failure: BankWriteFailed) -> None:
        self.write_failure = failure
        log.error("memory bank write given up", reason=str(failure))
        for _, future in self._waiters:
            if not future.done():
                future.set_exception(failure)
        self._waiters = []

    def check_writable(self) -> None:
        if self.write_failure is not None:
            raise self.write_failure

    async def flush_once(self, fold: bool | None = None) -> None:
        """Append the queued log rows (one write) and release the callers they acknowledge. A fold
        due at this point runs in the background (awaited when `fold` is asked for explicitly)."""
        self.check_writable()
        async with self.log_lock:
            job = self.bank.begin_flush(fold)
            if job.rows:
                started = time.perf_counter()
                try:
                    # Bounded: a write hung on a stalled file system must not hold every ack.
                    await asyncio.wait_for(asyncio.to_thread(self.bank.write_log, job), self.config.write_give_up_s)
                except BaseException:
                    self.bank.pending = job.rows + self.bank.pending
                    if job.fold is not None:
                        self.bank.abort_fold(job.fold)
                    raise
                self._metrics.flush_ms.observe((time.perf_counter() - started) * 1000)
            self.bank.end_flush(job)
            self._metrics.log_rows.set(self.bank.log_rows)
        self._release()
        if job.fold is not None:
            if fold:
                await self._fold(job.fold)
            else:
                self._folder = asyncio.get_running_loop().create_task(self._fold(job.fold))

    async def _fold(self, fold: FoldJob) -> None:
        """Merge changed values into the items table, then trim the log. Log appends (and so update
        acknowledgements) go on meanwhile; only the short trim takes the log lock."""
        try:
            async with self.items_lock:
                await asyncio.to_thread(self.bank.write_fold, fold)
            async with self.log_lock:
                log_rows = await asyncio.to_thread(self.bank.trim_log, fold)
                self.bank.end_fold(fold, log_rows)
            self._metrics.log_rows.set(log_rows)
        except Exception as exc:
            self.bank.abort_fold(fold)
            # The log keeps the values: nothing is lost. Said once a minute at most (a full disk
            # fails every fold; a traceback each time flooded the log).
            if time.monotonic() - self._fold_failed_said >= 60.0:
                self._fold_failed_said = time.monotonic()
                log.warning("memory fold failed; its items stay queued for the next fold",
                            reason=str(write_failure(exc, self.config.uri)), exc_info=exc)

    def _release(self) -> None:
        durable = self.bank.durable_seq
        still = []
        for seq, future in self._waiters:
            if seq <= durable:
                if not future.done():
                    future.set_result(None)
            else:
                still.append((seq, future))
        self._waiters = still

    async def until_durable(self, seq: int) -> None:
        if seq <= self.bank.durable_seq:
            return
        self.check_writable()
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append((seq, future))
        self.kick()
        self._urgent.set()
        await future

    async def fold_finished(self) -> None:
        while self._folder is not None and not self._folder.done():
            await asyncio.sleep(0.05)  # a background fold finishes first
