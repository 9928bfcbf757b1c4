"""MemoryActor: the one memory of a cluster, a named async Ray actor over a MemoryBank.

State changes run on the actor's event loop, in arrival order (each call applies its change
before its first await), so concurrent episodes never lose an update. Durable writes are group
commits (memory_actor.group_commit): a background task appends every queued log row in one
LanceDB write per window and then releases the callers waiting for their acknowledgement.
Retrievals arriving together are served as one batch. Blocking work (embedding, LanceDB I/O)
runs in threads, one writer at a time.
"""

from __future__ import annotations

import asyncio
import gc
import os
import threading
import time
from typing import Any

import structlog

from memory_actor.bank import MemoryBank
from memory_actor.bank_retrieval import planned_ids
from memory_actor.config import MemoryConfig, memory_actor_name
from memory_actor.disk.bank_errors import BankWriteFailed
from memory_actor.disk.lease import (
    BankInUse,
    BankUnusable,
    lease_record,
)
from memory_actor.group_commit import GroupCommit
from memory_actor.items import MemoryItem
from memory_actor.messages import BankStats, Retrieval, RetrievalRequest, UpdateAck, ValueUpdate

log = structlog.get_logger("evokernel.memory.actor")

_LATENCY_MS = [0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 5000]


class ActorMetrics:
    """Ray metrics for the dashboard (Prometheus names evokernel_memory_*); the group commit
    records the durable writes' (flush_ms, log_rows)."""

    def __init__(self) -> None:
        from ray.util import metrics

        self.items = metrics.Gauge("evokernel_memory_items", "items in the bank", tag_keys=("kind",))
        self.retrievals = metrics.Counter("evokernel_memory_retrievals", "retrievals served", tag_keys=("stage", "mode"))
        self.updates = metrics.Counter("evokernel_memory_updates", "value updates applied", tag_keys=("stage",))
        self.retrieve_ms = metrics.Histogram("evokernel_memory_retrieve_ms", "retrieval latency in the actor",
                                             boundaries=_LATENCY_MS, tag_keys=("stage",))
        self.flush_ms = metrics.Histogram("evokernel_memory_flush_ms", "durable log write (group commit)",
                                          boundaries=_LATENCY_MS)
        self.ack_ms = metrics.Histogram("evokernel_memory_update_ack_ms", "update received to durable",
                                        boundaries=_LATENCY_MS)
        self.log_rows = metrics.Gauge("evokernel_memory_log_rows", "rows in the update log table")

    def count_items(self, bank: MemoryBank) -> None:
        for kind, count in bank.index.counts("kind").items():
            self.items.set(count, tags={"kind": kind})


class MemoryActor:
    def __repr__(self) -> str:
        """What the Ray dashboard's Actors table shows (Repr): name, bank folder, retrieval mode."""
        uri = str(self.config.uri).rstrip("/")
        return f"{memory_actor_name(self.config)} (bank {uri.rsplit('/', 1)[-1]}, retrieval {self.config.retrieval})"

    @property
    def bank(self) -> MemoryBank:
        if self._bank is None:
            kind, reason = self.refusal or ("BankUnusable", "the memory bank is not open")
            raise (BankInUse if kind == "BankInUse" else BankUnusable)(reason)
        return self._bank

    def __init__(self, config: dict[str, Any] | MemoryConfig, owner: str | None = None):
        self.config = MemoryConfig.model_validate(config)
        self.holder = lease_record(owner)
        self.refusal: tuple[str, str] | None = None  # (BankInUse or BankUnusable, its one line)
        self._recalls: list[tuple[RetrievalRequest, asyncio.Future[Retrieval]]] = []
        self._recall_servers: set[asyncio.Task[None]] = set()
        self._metrics = ActorMetrics()
        self._bank: MemoryBank | None = None
        self._refresher: asyncio.Task[None] | None = None  # a refresh of the recall index (memory_actor/recall/)
        self._commits = GroupCommit(self.config, lambda: self.bank, self._metrics)  # the durable writes
        try:
            # This process becomes the bank's one writer (memory_actor.disk.lease).
            self._bank = MemoryBank(self.config, owner=owner)
        except BankUnusable as exc:
            # Another process writes the bank (a race lost after `evokernel run` checked it), or
            # it cannot be written. The actor stays up, refused: open_memory_actor says so in one
            # line and ends it (a failed creation would put Ray's traceback on the terminal).
            self.refusal = (type(exc).__name__, str(exc))
            log.warning("memory bank refused", reason=str(exc))
            return
        # The bank's objects live as long as the actor: keep the collector from rescanning them
        # (full collections over 100k items are the worst retrieval-latency outliers).
        gc.collect()
        gc.freeze()
        self._metrics.count_items(self._bank)
        if self._bank.recall is not None:  # LanceDB reads the index's files as asked; read them now, meanwhile serving
            threading.Thread(target=self._bank.recall.table.prewarm, name="recall-prewarm", daemon=True).start()
        if self.config.preload_embedder and self.config.retrieval != "none":
            # The first text retrieval should not wait seconds for the model to load.
            threading.Thread(target=self._bank.embedder.embed, args=(["warm up"],), daemon=True).start()
        log.info("memory actor ready", pid=os.getpid(), items=len(self._bank.items))

    # -- the API ------------------------------------------------------------------------------------
    async def add(self, items: list[MemoryItem]) -> list[str]:
        """Store items (embedding those without a vector); durable when this returns."""
        if not items:
            return []
        self._commits.check_writable()
        prepared, vectors = await asyncio.to_thread(self.bank.prepare_items, items)
        async with self._commits.items_lock:
            await asyncio.to_thread(self.bank.write_items, prepared, vectors)
            ids = self.bank.index_items(prepared, vectors)
        self._metrics.count_items(self.bank)
        if self.bank.fold_due():
            self._commits.kick()
        if self.bank.refresh_due() and (self._refresher is None or self._refresher.done()):
            self._refresher = asyncio.get_running_loop().create_task(self._refresh())
        return ids

    async def _refresh(self) -> None:
        """The items added since the index's last refresh into LanceDB's index, in the background
        (memory_actor/recall/): retrievals, updates and adds go on meanwhile."""
        job = self.bank.begin_refresh()
        try:
            await asyncio.to_thread(self.bank.write_refresh, job)
        except Exception as exc:  # they stay fresh (searched exactly): the next add tries again
            self.bank.end_refresh(None)
            log.warning("recall index refresh failed", reason=str(exc)[:300])
            return
        record = self.bank.end_refresh(job)
        async with self._commits.items_lock:
            await asyncio.to_thread(self.bank.store.write_meta, {"recall": record})

    async def retrieve(self, request: RetrievalRequest) -> Retrieval:
        """Queued with the retrievals arriving meanwhile and served as one batch: one embedding
        call and one pass over the matrix (in a thread, so updates go on) for all of them."""
        arrived = time.perf_counter()
        # One server (a pass over the matrix uses the cores); on LanceDB's index, as many as the
        # config allows: a recall there waits on reads as much as it computes.
        servers = 1 if self.bank.recall is None else self.config.recall_index_servers
        future: asyncio.Future[Retrieval] = asyncio.get_running_loop().create_future()
        self._recalls.append((request, future))
        self._recall_servers = {server for server in self._recall_servers if not server.done()}
        if len(self._recall_servers) < min(servers, len(self._recalls)):
            self._recall_servers.add(asyncio.get_running_loop().create_task(self._serve_recalls()))
        retrieval = await future
        retrieval.elapsed_ms = (time.perf_counter() - arrived) * 1000
        self._metrics.retrievals.inc(tags={"stage": request.stage, "mode": retrieval.mode})
        self._metrics.retrieve_ms.observe(retrieval.elapsed_ms, tags={"stage": request.stage})
        self._commits.kick()
        return retrieval

    async def _serve_recalls(self) -> None:
        while self._recalls:
            size = self.config.recall_batch if self.bank.recall is None else self.config.recall_index_batch
            batch, self._recalls = self._recalls[:size], self._recalls[size:]
            started = time.perf_counter()
            try:
                requests = [request for request, _ in batch]
                texts = [r.query for r in requests if self.bank.needs_query_vector(r) and r.query_embedding is None]
                if texts:
                    vectors = iter(await asyncio.to_thread(self.bank.embedder.embed, texts))
                    requests = [r.model_copy(update={"query_embedding": next(vectors).tolist()})
                                if self.bank.needs_query_vector(r) and r.query_embedding is None else r
                                for r in requests]
                queries = self.bank.query_matrix(requests)
                sims = (await asyncio.to_thread(self.bank.recall_requests, requests, queries, len(self.bank.index))
                        if len(queries) else queries)
                plans = self.bank.plan_retrievals(requests, sims)
                if self.bank.recall is not None:  # the chosen items' texts, read from disk (memory_actor/recall/)
                    await asyncio.to_thread(self.bank.items.prefetch, planned_ids(plans))
                retrievals = self.bank.fill_retrievals(plans)
            except Exception:  # one bad request must not fail the others: serve them one by one
                for request, future in batch:
                    try:
                        future.set_result(self.bank.retrieve(request))
                    except Exception as exc:
                        future.set_exception(exc)
                continue
            service_ms = (time.perf_counter() - started) * 1000
            for (_, future), retrieval in zip(batch, retrievals, strict=True):
                retrieval.service_ms = service_ms
                if not future.done():
                    future.set_result(retrieval)

    async def update(self, update: ValueUpdate) -> UpdateAck:
        """Apply at once (in arrival order); the reply comes when the update is durable.

        Callers that do not need the acknowledgement just drop the returned ObjectRef.
        """
        started = time.perf_counter()
        ack = self.bank.stage_update(update)
        if not ack.duplicate:
            self._metrics.updates.inc(tags={"stage": update.stage})
        if len(self.bank.pending) >= self.config.flush_max_rows:
            self._commits.work.set()
        await self._commits.until_durable(ack.seq)
        self._metrics.ack_ms.observe((time.perf_counter() - started) * 1000)
        return ack.model_copy(update={"durable": True})

    async def update_batch(self, updates: list[ValueUpdate]) -> list[UpdateAck]:
        """Many updates in one call, applied in list order; one reply when all are durable. A refused
        update (unknown ids) gets an ack with `error` set and changes nothing.

        Called by bench/memory_client.py's MemoryClient, which the memory benchmark
        (bench/memory.py) uses to measure batched updates; campaigns send one `update` per attempt."""
        acks = []
        for update in updates:
            try:
                acks.append(self.bank.stage_update(update))
            except KeyError as exc:
                acks.append(UpdateAck(update_id=update.update_id, seq=-1, item_ids=update.item_ids,
                                      reward_applied=0.0, durable=False, error=str(exc)))
        for update, ack in zip(updates, acks, strict=True):
            if ack.error is None and not ack.duplicate:
                self._metrics.updates.inc(tags={"stage": update.stage})
        if len(self.bank.pending) >= self.config.flush_max_rows:
            self._commits.work.set()
        await self._commits.until_durable(max((ack.seq for ack in acks), default=0))
        return [ack if ack.error else ack.model_copy(update={"durable": True}) for ack in acks]

    async def get(self, item_id: str, with_embedding: bool = False) -> MemoryItem | None:
        return self.bank.get(item_id, with_embedding)

    async def children(self, item_id: str) -> list[MemoryItem]:
        return self.bank.children(item_id)

    async def api_items(self, backend: str, names: list[str] | None = None, core: bool = True) -> list[MemoryItem]:
        return self.bank.api_items(backend, names, core)

    async def stats(self, disk: bool = True) -> BankStats:
        if not disk:
            return self.bank.stats(disk=False)
        async with self._commits.items_lock, self._commits.log_lock:
            return await asyncio.to_thread(self.bank.stats, True)

    async def flush(self) -> int:
        """Wait until everything received so far is durable; returns the durable sequence number."""
        await self._commits.until_durable(self.bank.seq)
        return self.bank.durable_seq

    async def close(self) -> int:
        """The campaign ends: everything durable, the log folded, and the writer lease given
        back now (a `--resume` started at once must not find the dying process holding it).
        Writes failing at this point are given up at once: nobody will wait for the disk."""
        await self._commits.fold_finished()
        if self._refresher is not None:
            await asyncio.wait([self._refresher])  # a refresh in flight writes the recall table
        if self._commits.trouble is not None and self._commits.write_failure is None:
            self._commits.stop_writing(self._commits.trouble)
        try:
            await self._commits.until_durable(self.bank.seq)
        except BankWriteFailed:
            self.bank.store.close()  # nothing more can be written: the lease goes back all the same
            raise
        async with self._commits.items_lock, self._commits.log_lock:
            await asyncio.to_thread(self.bank.close)
        return self.bank.durable_seq

    async def compact(self) -> BankStats:
        """Fold the log into the items table and compact the tables now."""
        await self._commits.fold_finished()
        await self._commits.flush_once(fold=True)
        return await self.stats()

    async def recall_state(self) -> dict[str, Any]:
        """Whether the bank recalls through LanceDB's index, and how it stands (memory_actor/recall/)."""
        return self.bank.recall_state()

    async def pid(self) -> int:
        return os.getpid()

    async def serving(self) -> dict[str, Any]:
        """Which bank this actor serves, for whom (the lease record), or why it was refused."""
        return {"uri": self.config.uri, "holder": self.holder, "refusal": self.refusal}
