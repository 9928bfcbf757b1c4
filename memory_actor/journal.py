"""The bank's durable log: replaying it on start, group-committed appends, and folds that merge
changed values into the items table, trim the log and compact the tables.

The flush is split so the Ray actor can keep every state change on its event loop and do the
I/O in threads: `begin_flush` (state), `write_log` / `write_fold` / `trim_log` (I/O only: the
store and the job), `end_flush` / `end_fold` (state). `flush()` runs the steps in place.
`BankJournal` is a mixin of `MemoryBank`, whose state it reads and writes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import structlog

from memory_actor.items import MemoryItem, items_to_arrow, utc_now
from memory_actor.messages import UpdateAck
from memory_actor.values import Baseline, RewardNormaliser

log = structlog.get_logger("evokernel.memory.journal")


@dataclass
class FoldJob:
    """A consistent snapshot of changed items, written to the items table to shorten the log."""

    seq: int
    retrieval_cut: int
    ids: list[str]
    items: list[MemoryItem] | None  # references to immutable models; current values are in q and visits
    vectors: np.ndarray | None  # (items and vectors None: a bank on LanceDB's index writes the values alone)
    q: np.ndarray  # (2, len(items)): draft, refine
    visits: np.ndarray
    meta: dict[str, Any]


@dataclass
class FlushJob:
    rows: list[dict[str, Any]]
    fold: FoldJob | None = None
    last_seq: int = 0


class BankJournal:
    def _replay_log(self) -> None:
        """Fold the log (absolute values, in sequence order) over the values loaded from items."""
        folded_seq = self.seq
        entries = self.store.read_log()
        self.log_rows = entries.num_rows
        for row in entries.to_pylist():
            self.seq = max(self.seq, row["seq"])
            if row["type"] == "retrieval":
                self._remember_retrieval(row["ref_id"], row["seq"], row["stage"], row["item_ids"])
                continue
            if row["type"] == "slot":  # worked-example slot counts (absolute): successes in q, drafts in visits
                for key, successes, trials in zip(row["item_ids"], row["q"], row["visits"], strict=True):
                    self.slots.set(key, successes, int(trials))  # a refinement's are fractions
                continue
            if row["seq"] > folded_seq:  # rows at or below it are already counted in meta (crash mid-fold)
                self.updates_applied += -1 if row["type"] == "retract" else 1  # retract: memory_actor.retraction
            self.shaper.normaliser = RewardNormaliser(count=row["norm_count"], mean=row["norm_mean"],
                                                      m2=row["norm_m2"])
            if row.get("base_count") is not None:  # rows of older banks have no baseline
                self.shaper.baselines[row["stage"]] = Baseline(count=row["base_count"], mean=row["base_mean"])
            for item_id, q, visits in zip(row["item_ids"], row["q"], row["visits"], strict=True):
                if item_id in self.index.row_of:
                    self.index.set_value(row["stage"], self.index.row_of[item_id], q, visits)
                    self.dirty.add(item_id)
            shown = len(row["item_ids"]) if row.get("shown") is None else row["shown"]
            self._remember_update(UpdateAck(update_id=row["ref_id"], seq=row["seq"], item_ids=row["item_ids"][:shown],
                                            provenance_ids=row["item_ids"][shown:], reward_applied=row["applied"],
                                            advantage=row.get("advantage"), durable=True))
        self.durable_seq = self.seq

    def fold_due(self) -> bool:
        return not self.folding and bool(self.dirty) and (
            self.log_rows >= self.config.fold_every_rows or self.flushes_since_fold >= self.config.fold_every_flushes)

    def begin_flush(self, fold: bool | None = None) -> FlushJob:
        """Take the queued log rows (and, when a fold is due, a snapshot consistent with them)."""
        job = FlushJob(rows=self.pending, last_seq=self.seq)
        self.pending = []
        if (fold if fold is not None else self.fold_due()) and not self.folding:
            job.fold = self._fold_snapshot()
        return job

    def _fold_snapshot(self) -> FoldJob:
        ids = list(self.dirty)
        self.dirty = set()
        self.folding = True
        kept = list(self.retrievals.values())[-self.config.retrieval_log_keep:] if self.config.retrieval_log_keep else []
        cut = min(self.seq, kept[0][0] - 1) if kept else self.seq
        rows = np.fromiter((self.index.row_of[item_id] for item_id in ids), dtype=np.int64, count=len(ids))
        meta = {"folded": {"seq": self.seq, "updates": self.updates_applied, **self.shaper.state(),
                           "slots": self.slots.state()}}
        if self.recall is not None:  # memory_actor/recall/: the texts and embeddings stay on disk as they are
            return FoldJob(seq=self.seq, retrieval_cut=cut, ids=ids, items=None, vectors=None,
                           q=self.index.q[:, rows], visits=self.index.visits[:, rows], meta=meta)
        return FoldJob(seq=self.seq, retrieval_cut=cut, ids=ids, items=[self.items[item_id] for item_id in ids],
                       vectors=self.index.vectors[rows], q=self.index.q[:, rows], visits=self.index.visits[:, rows],
                       meta=meta)

    # The I/O steps below touch only the store and the job, so they may run in threads: the log
    # (write_log, trim_log) and the items table (write_items, write_fold) under separate locks.
    def write_log(self, job: FlushJob) -> None:
        self.store.append_log(job.rows)

    def write_fold(self, fold: FoldJob) -> None:
        """Merge a fold's snapshot into the items table, record it in meta, compact both."""
        values = {"q_draft": fold.q[0], "q_refine": fold.q[1], "visits_draft": fold.visits[0],
                  "visits_refine": fold.visits[1], "updated_at": [utc_now()] * len(fold.ids)}
        if fold.items is None:
            self.write_values(fold.ids, values)
        else:
            self.store.upsert_items(items_to_arrow(fold.items, self.dim, fold.vectors, values))
        self.store.write_meta(fold.meta)
        self.store.compact(self.config.version_retention_s, tables=("items", "meta"))

    def trim_log(self, fold: FoldJob) -> int:
        """Delete the log rows a fold made redundant and compact the log; returns its row count.
        The update rows move to the history table first: a resume may take them back later."""
        if self.config.history_keep_rows:
            self.store.archive_log(fold.seq, self.config.history_keep_rows)
        self.store.delete_log(f"seq <= {fold.seq} AND (type IN ('update', 'slot', 'retract') "
                              f"OR seq <= {fold.retrieval_cut})")
        self.store.compact(self.config.version_retention_s, tables=("log", "history"))
        self.store.record_checksums()  # what the fold and the compactions wrote (bank_checksums)
        return self.store.log.count_rows()

    def end_flush(self, job: FlushJob) -> None:
        self.durable_seq = max(self.durable_seq, job.last_seq)
        self.log_rows += len(job.rows)
        if job.rows:
            self.flushes_since_fold += 1

    def end_fold(self, fold: FoldJob, log_rows: int) -> None:
        self.folding = False
        self.flushes_since_fold = 0
        self.log_rows = log_rows
        log.info("memory log folded", seq=fold.seq, items=len(fold.ids), log_rows=log_rows)

    def abort_fold(self, fold: FoldJob) -> None:
        """A fold failed: its items stay dirty for the next one (the log still holds their values)."""
        self.folding = False
        self.dirty.update(fold.ids)

    def flush(self, fold: bool | None = None) -> int:
        """Make every queued log row durable (folding when due); returns the durable sequence number."""
        job = self.begin_flush(fold)
        try:
            self.write_log(job)
        except BaseException:
            self.pending = job.rows + self.pending  # nothing is lost: retried at the next flush
            if job.fold is not None:
                self.abort_fold(job.fold)
            raise
        self.end_flush(job)
        if job.fold is not None:
            try:
                self.write_fold(job.fold)
                self.end_fold(job.fold, self.trim_log(job.fold))
            except BaseException:
                self.abort_fold(job.fold)
                raise
        return self.durable_seq

    def _maybe_fold_now(self) -> None:
        if self.fold_due():
            self.flush(fold=True)

    def compact(self, retention_s: float | None = None) -> None:
        """Fold the log into the items table and compact every table now, keeping versions younger
        than `retention_s` (default: the config's version_retention_s)."""
        self.flush(fold=True)
        if retention_s is not None:
            self.store.compact(retention_s)

    def snapshot(self, dest: str) -> None:
        """Make the log durable and copy the bank to DEST: a bank that opens there is this one as
        it is now (the learning benchmark keeps one after every operator of an arm)."""
        self.flush()
        self.store.copy_to(dest)

    def close(self) -> None:
        """Make everything durable (folding what the log holds) and give up the writer lease. A
        read-only bank writes nothing, not even here."""
        if self.store.read_only:
            return
        try:
            self.flush(fold=bool(self.dirty) or self.log_rows > 0)
            self.store.record_checksums()
        finally:
            self.store.close()
