"""What `MemoryBank` does differently when it recalls through LanceDB's vector index (issue 68):
opening column by column, keeping added items fresh until a refresh, reading item texts and
embeddings from disk, the refresh and its record. A mixin of MemoryBank (bank.py), like
BankRetrieval and BankJournal; `self.recall` is None for a bank below the threshold, and then
none of this runs.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pyarrow as pa
import structlog

from memory_actor.disk.bank_errors import write_failure
from memory_actor.items import MemoryItem, items_from_arrow, items_to_arrow, utc_now
from memory_actor.recall.indexed import IndexedRecall, RefreshJob
from memory_actor.recall.items import _in_list
from memory_actor.recall.opening import api_items, open_indexed, wants_index
from memory_actor.recall.table import INDEX_TYPE, recall_rows

log = structlog.get_logger("evokernel.memory.recall")

META_KEY = "recall"


class IndexedBank:
    recall: IndexedRecall | None
    _recall_meta: dict[str, Any]

    def _open_indexed(self) -> bool:
        """Open the bank for indexed recall if it is big enough; False: the exact path."""
        self.recall = None
        if not wants_index(self.store, self.config.recall_index_min_items):
            return False
        started = time.perf_counter()
        index, items, recall, loaded, api = open_indexed(self.store, self.dim, self.config, self.shaper.prior)
        self.index, self.items, self.recall = index, items, recall
        self.slot_kernels, self.task_kernels = loaded.kernels, loaded.task_kernels
        if api.num_rows:
            found, vectors = api_items(api, self.dim)
            self._index_items(found, vectors)  # resident, looked up by name; pinned for the slot
        self._recall_meta = dict(self.store.read_meta().get(META_KEY, {}))
        if not self.store.read_only and not self._recall_meta:
            self._record_recall(built=True)
        self.recall_open_s = round(time.perf_counter() - started, 2)
        return True

    def _indexed_added(self, items: list[MemoryItem], vectors: np.ndarray) -> None:
        rows = np.array([self.index.row_of[item.id] for item in items], dtype=np.int64)
        api = np.array([item.kind == "api" for item in items], dtype=bool)
        if api.any():
            self.recall.pin(rows[api], vectors[api])

    def _write_recall_rows(self, items: list[MemoryItem], vectors: np.ndarray) -> None:
        """Items re-added (same ids): their recall rows rewritten now (I/O; the writer's thread),
        so that a reopened bank never recalls an item by its previous text."""
        again = [i for i, item in enumerate(items) if item.id in self.index.row_of]
        if self.recall is not None and again:
            table = items_to_arrow([items[i] for i in again], self.dim, vectors[again])
            self.recall.table.merge(recall_rows(table, self.dim))

    def write_values(self, ids: list[str], values: dict[str, Any]) -> None:
        """A fold of a bank on the index: the changed values (and updated_at) of `ids` merged into
        the items table by id, texts and embeddings left as they are (I/O; the fold's thread)."""
        if not ids:
            return
        schema = self.store.items.schema
        table = pa.table({"id": ids, **values}, schema=pa.schema([schema.field(name) for name in ["id", *values]]))
        try:
            self.store.items.merge_insert("id").when_matched_update_all().execute(table)
        except Exception as exc:
            raise write_failure(exc, self.config.uri) from exc

    # -- reading ------------------------------------------------------------------------------------
    def _stored_embedding(self, item_id: str) -> list[float] | None:
        fresh = self.recall.fresh_vector(self.index.row_of[item_id])
        if fresh is not None:
            return fresh.tolist()
        return self.items.embedding(item_id)

    def _stored_children(self, item_id: str) -> list[str]:
        """Children from the items table, oldest first (as the exact path lists them)."""
        found = (self.store.items.search().where(f"parent_id = {_in_list([item_id])}")
                 .select(["id", "created_at"]).limit(None).to_arrow())
        order = sorted(zip(found["created_at"].to_pylist(), found["id"].to_pylist(), strict=True))
        return [child for _, child in order if child in self.index.row_of]

    def _stored_rows(self) -> list[dict[str, Any]]:
        """Every item with its current values and embedding, JSON-ready, read in batches."""
        rows = []
        for batch in self.store.items.search().limit(None).to_batches():
            for item in items_from_arrow(pa.Table.from_batches([batch]), with_embedding=True, trusted=True):
                if item.id in self.index.row_of:
                    values = self._public_values(item.id)
                    rows.append(item.model_copy(update=values).model_dump(mode="json"))
        return rows

    # -- the refresh ----------------------------------------------------------------------------------
    def refresh_due(self) -> bool:
        return (self.recall is not None and not self.store.read_only
                and self.recall.refresh_due(self.config.recall_refresh_rows))

    def begin_refresh(self) -> RefreshJob:
        return self.recall.begin_refresh()

    def write_refresh(self, job: RefreshJob) -> None:
        """I/O only (a thread): the fresh rows into the recall table, LanceDB's optimize."""
        self.recall.write_refresh(job)

    def end_refresh(self, job: RefreshJob | None) -> dict[str, Any]:
        self.recall.end_refresh(job)
        if job is not None:
            log.info("recall index refreshed", **self.recall.record)
        return self.recall_meta()

    def refresh_index(self) -> None:
        """Add the fresh items to the index now (a plain MemoryBank; the actor does it in the
        background)."""
        job = self.begin_refresh()
        try:
            self.write_refresh(job)
        except BaseException:
            self.end_refresh(None)
            raise
        self.store.write_meta({META_KEY: self.end_refresh(job)})

    def recall_meta(self) -> dict[str, Any]:
        """The index's record in meta: type, partitions, built and last refreshed when."""
        self._recall_meta.update(self.recall.record)
        return dict(self._recall_meta)

    def _record_recall(self, built: bool = False) -> None:
        record = {"index": INDEX_TYPE, "partitions": self.recall.table.partitions(len(self.index)),
                  "threshold": self.config.recall_index_min_items}
        if built:
            record["built_at"] = record["refreshed_at"] = utc_now().isoformat(timespec="seconds")
        self._recall_meta = record
        self.store.write_meta({META_KEY: record})

    def recall_state(self) -> dict[str, Any]:
        """For `evokernel memory stats`: whether the bank recalls through the index, and how it stands."""
        if self.recall is None:
            return {"indexed": False, "threshold": self.config.recall_index_min_items}
        state = {"indexed": True, "threshold": self.config.recall_index_min_items,
                 "fresh_items": len(self.recall.fresh_rows), **self.recall.table.state()}
        state.update(self.recall_meta())
        return state
