"""Phase-1 recall of a large bank through LanceDB's vector index (issue 68).

A bank opened with at least `memory.recall_index_min_items` items keeps no embedding matrix:
the recall table (recall/table.py) holds the vectors and their IVF_SQ index on disk. A recall
then takes the K most similar eligible items from two sources and merges them by similarity:

- **the index**: without a filter, `limit` = K over the share of items the filter keeps (the
  per-class counts in the actor), with a margin; the candidates are masked in the actor by the
  same codes as the exact recall (`VectorIndex.keep_rows`). A scoped request, a filter that keeps
  under PREFILTER_SHARE of the bank, or candidates that leave fewer than K eligible, ask again
  with the filter as LanceDB's prefilter (`where_sql`), so the pool is always filled from
  eligible items, never cut down to them.
- **the fresh items**: those added since the last refresh, whose vectors the actor holds and
  searches exactly (at most about `recall_refresh_rows` of them).

A refresh (in the background: `begin_refresh`, `write_refresh` in a thread, `end_refresh`)
appends the fresh items to the recall table in one write and runs LanceDB's optimize, which adds
them to the index without retraining it; only then do they leave the actor's memory.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from memory_actor.index import RecallFilter, VectorIndex
from memory_actor.items import utc_now
from memory_actor.recall.table import RecallTable, recall_schema, where_sql
from memory_actor.scope import trace_scope

PREFILTER_SHARE = 0.2  # below this share of eligible items, LanceDB's prefilter is cheaper than masking
OVERSAMPLE = 1.25
SLOT_KERNELS_RECALLED = 32  # the nearest feasible kernels of a draft's family and shape, for its slot


@dataclass
class Recalled:
    """One request's phase 1 from the index: its pool (rows, similarities, most similar first),
    and the similarities its slot decision may ask for (api items, the nearest kernels)."""

    rows: np.ndarray
    sims: np.ndarray
    known: dict[int, float] = field(default_factory=dict)
    kernel_ids: list[str] | None = None
    read: list[str] = field(default_factory=list)  # further items its slot decision reads

    def similarity(self, row: int) -> float | None:
        return self.known.get(row)


@dataclass
class RefreshJob:
    rows: np.ndarray
    versions: np.ndarray
    table: pa.Table
    started: float = field(default_factory=time.monotonic)


class IndexedRecall:
    def __init__(self, table: RecallTable, index: VectorIndex, dim: int):
        self.table, self.index, self.dim = table, index, dim
        # The fresh rows, their vectors and versions (a re-added item's newer vector stays fresh),
        # replaced whole (never changed in place): a recall in a thread reads one consistent triple.
        self._fresh_state = (np.zeros(0, dtype=np.int64), np.zeros((0, dim), dtype=np.float32),
                             np.zeros(0, dtype=np.int64))
        self._version = 0
        self.pinned: dict[int, np.ndarray] = {}  # api items: the family examples' similarity in the slot
        self.refreshing = False
        self.record: dict[str, Any] = {}  # the last refresh: when, how many rows, how long

    @property
    def fresh_rows(self) -> np.ndarray:
        return self._fresh_state[0]

    @property
    def fresh_vectors(self) -> np.ndarray:
        return self._fresh_state[1]

    def fresh_vector(self, row: int) -> np.ndarray | None:
        rows, vectors, _ = self._fresh_state
        found = np.flatnonzero(rows == row)
        return vectors[found[0]] if len(found) else None

    # -- rows -----------------------------------------------------------------------------------
    def add_fresh(self, rows: np.ndarray, vectors: np.ndarray) -> None:
        """Items added (or re-added) since the last refresh: searched exactly until the next one."""
        fresh_rows, fresh_vectors, fresh_version = self._fresh_state
        rows = np.asarray(rows, dtype=np.int64)
        known = {int(row): pos for pos, row in enumerate(fresh_rows.tolist())}
        again = np.array([known.get(int(row), -1) for row in rows], dtype=np.int64)
        self._version += 1
        old = again >= 0
        fresh_vectors, fresh_version = fresh_vectors.copy(), fresh_version.copy()
        fresh_vectors[again[old]] = vectors[old]
        fresh_version[again[old]] = self._version
        self._fresh_state = (np.concatenate([fresh_rows, rows[~old]]),
                             np.concatenate([fresh_vectors, np.asarray(vectors[~old], dtype=np.float32)]),
                             np.concatenate([fresh_version, np.full(int((~old).sum()), self._version)]))

    def pin(self, rows: np.ndarray, vectors: np.ndarray) -> None:
        for row, vector in zip(np.asarray(rows).tolist(), vectors, strict=True):
            self.pinned[int(row)] = np.asarray(vector, dtype=np.float32)

    # -- recall -----------------------------------------------------------------------------------
    def recall(self, query: np.ndarray, where: RecallFilter, k: int) -> Recalled:
        """The k most similar items `where` keeps (fewer only when fewer are eligible)."""
        return self.recall_many(query[None, :], [where], [k])[0]

    def recall_many(self, queries: np.ndarray, wheres: list[RecallFilter], ks: list[int]) -> list[Recalled]:
        """`recall` for several requests; those whose filter keeps a large share of the bank ask
        the index together (one LanceDB query for all their vectors)."""
        shares = [self.index.eligible_share(where) for where in wheres]
        broad = [i for i, (share, k) in enumerate(zip(shares, ks, strict=True)) if share >= PREFILTER_SHARE and k > 0]
        limits = {i: math.ceil(ks[i] / shares[i] * OVERSAMPLE) + 8 for i in broad}
        found = dict(zip(broad, self.table.search_many(queries[broad], max(limits.values())), strict=True)) if broad else {}
        out = []
        for i, (query, where, k) in enumerate(zip(queries, wheres, ks, strict=True)):
            rows, sims = self._fresh(query, where, k)
            if k > 0:
                found_rows, found_sims = self._indexed(query, where, k, found.get(i), limits.get(i, 0))
                rows, sims = np.concatenate([rows, found_rows]), np.concatenate([sims, found_sims])
            order = np.argsort(-sims, kind="stable")[:k]
            out.append(Recalled(rows=rows[order], sims=sims[order],
                                known=dict(zip(rows[order].tolist(), sims[order].tolist(), strict=True))))
        return out

    def _fresh(self, query: np.ndarray, where: RecallFilter, k: int) -> tuple[np.ndarray, np.ndarray]:
        fresh_rows, fresh_vectors, _ = self._fresh_state
        if not len(fresh_rows) or k <= 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        keep = self.index.keep_rows(fresh_rows, where)
        sims = fresh_vectors[keep] @ query
        top = np.argsort(-sims, kind="stable")[:k]
        return fresh_rows[keep][top], sims[top]

    def _indexed(self, query: np.ndarray, where: RecallFilter, k: int,
                 candidates: tuple[list[str], np.ndarray] | None, limit: int) -> tuple[np.ndarray, np.ndarray]:
        """From the index: the unfiltered candidates (`limit` asked), masked here; else (a small
        share eligible, or too few candidates left) the filter as LanceDB's prefilter."""
        if candidates is not None:
            ids, sims = candidates
            rows, sims = self._rows(ids[:limit], sims[:limit])
            keep = self.index.keep_rows(rows, where)
            if keep.sum() >= k or len(ids) < limit:  # enough, or every row of the index was a candidate
                return rows[keep][:k], sims[keep][:k]
        limit = k + min(len(self.fresh_rows), k)
        for _ in range(3):  # rows the actor drops (fresh, or taken back since: memory_actor.retraction) ask for more
            ids, sims = self.table.search(query, limit, where_sql(where))
            rows, sims = self._rows(ids, sims)
            keep = self.index.keep_rows(rows, where)  # the same mask (a row re-added since: its codes now)
            if keep.sum() >= k or len(ids) < limit:
                break
            limit *= 4
        return rows[keep][:k], sims[keep][:k]

    def _rows(self, ids: list[str], sims: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Rows of the ids found, without those the actor searches itself (fresh) or does not know."""
        row_of = self.index.row_of
        rows = np.fromiter((row_of.get(item_id, -1) for item_id in ids), dtype=np.int64, count=len(ids))
        keep = rows >= 0
        if len(self.fresh_rows):
            keep &= ~np.isin(rows, self.fresh_rows)
        return rows[keep], np.asarray(sims, dtype=np.float32)[keep]

    def slot_similarities(self, query: np.ndarray, backend: str, slot: Any,
                          task_kernels: dict[tuple[str, str], list[str]], recalled: Recalled) -> None:
        """A draft's slot (`slot`, a SlotRequest): the similarity of every api item (the family
        examples), of the nearest feasible kernels of its family and shape (their ids in
        `recalled.kernel_ids`) and of the operator's own kernels in another backend, into
        `recalled`."""
        for row, vector in self.pinned.items():
            recalled.known[row] = float(vector @ query)
        where = RecallFilter(backend, ("trace",), None, True, (trace_scope(slot.family, slot.shape),))
        fresh_rows, fresh_sims = self._fresh(query, where, SLOT_KERNELS_RECALLED)
        ids, sims = self.table.search(query, SLOT_KERNELS_RECALLED, where_sql(where))
        rows, sims = self._rows(ids, sims)
        rows, sims = np.concatenate([fresh_rows, rows]), np.concatenate([fresh_sims, sims])
        recalled.known.update(zip(rows.tolist(), sims.tolist(), strict=True))
        recalled.kernel_ids = [self.index.ids[row] for row in rows.tolist()]
        recalled.read += recalled.kernel_ids
        own = task_kernels.get((slot.cross_backend, slot.task_id), []) if slot.cross_backend else []
        if own:
            recalled.known.update(self.similarities(query, own))
            recalled.read += own  # read into memory with the kernels (their verdicts are compared)

    def similarities(self, query: np.ndarray, ids: list[str]) -> dict[int, float]:
        """Rows and similarities of the given items (the fresh ones from memory)."""
        fresh_rows, fresh_vectors, _ = self._fresh_state
        rows = np.array([self.index.row_of[item_id] for item_id in ids], dtype=np.int64)
        fresh = np.isin(rows, fresh_rows)
        found = {int(row): float(fresh_vectors[np.flatnonzero(fresh_rows == row)[0]] @ query) for row in rows[fresh]}
        rest = [self.index.ids[row] for row in rows[~fresh].tolist()]
        if rest:
            listed = ", ".join("'" + item_id.replace("'", "''") + "'" for item_id in rest)
            got_ids, got_sims = self.table.search(query, len(rest), f"id IN ({listed})")
            found.update((self.index.row_of[i], float(sim)) for i, sim in zip(got_ids, got_sims, strict=True))
        return found

    # -- refresh ----------------------------------------------------------------------------------
    def refresh_due(self, rows: int) -> bool:
        return not self.refreshing and len(self.fresh_rows) >= rows

    def begin_refresh(self) -> RefreshJob:
        """The fresh rows as recall rows (on the bank's thread: reads the index's codes)."""
        self.refreshing = True
        rows, vectors, versions = self._fresh_state
        columns = self.index.filter_values(rows)
        columns["embedding"] = pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), self.dim)
        table = pa.table(columns, schema=recall_schema(self.dim))
        return RefreshJob(rows=rows, versions=versions, table=table)

    def write_refresh(self, job: RefreshJob) -> None:
        """I/O only (a thread): the rows into the table, then LanceDB's optimize."""
        self.table.merge(job.table)
        self.table.refresh()

    def end_refresh(self, job: RefreshJob | None) -> None:
        """The job's rows leave the actor's memory (unless re-added since); None: it failed."""
        self.refreshing = False
        if job is None:
            return
        done = dict(zip(job.rows.tolist(), job.versions.tolist(), strict=True))
        rows, vectors, versions = self._fresh_state
        stay = np.array([done.get(row) != version for row, version in
                         zip(rows.tolist(), versions.tolist(), strict=True)], dtype=bool)
        self._fresh_state = (rows[stay], vectors[stay], versions[stay])
        self.record = {"refreshed_at": utc_now().isoformat(timespec="seconds"), "rows_added": len(job.rows),
                       "refresh_s": round(time.monotonic() - job.started, 2)}
