"""The `recall` table of a large bank (issue 68): per item its id, the columns of the recall's
prefilter (backend, kind, task, feasible, scope: what `VectorIndex.mask` filters on) and its
embedding, with LanceDB's vector index over the embeddings.

It is derived from the items table (which stays the bank's record: values, texts, embeddings)
and written only by the bank's one writer: built once when a bank is first opened above
`memory.recall_index_min_items`, appended to by each refresh (the items added since), and
rewritten row by row when an item is re-added. Why a table of its own and not an index on the
items table: folds rewrite the rows of every item whose value changed, and a rewritten row
drops out of the vector index until the next re-index (LanceDB searches it without the index).

The index: IVF_SQ, cosine (bench/results/memory-*: at 1M items it builds in seconds where
IVF_PQ's training takes minutes and IVF_HNSW_SQ's graph did not finish in 13 minutes on 2 cores,
and with a re-rank of 2x the candidates by their stored vectors its recall is that of exact
search to within a few hundredths).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import numpy as np
import pyarrow as pa
import structlog

from memory_actor.config import MemoryConfig
from memory_actor.index import RecallFilter
from memory_actor.recall.columns import item_filters

log = structlog.get_logger("evokernel.memory.recall")

RECALL = "recall"
INDEX_NAME = "embedding_idx"
INDEX_TYPE = "IVF_SQ"
MAX_PARTITIONS = 4096
SCALAR_INDEXED = ("backend", "kind", "feasible", "scope", "task")


def recall_schema(dim: int) -> pa.Schema:
    return pa.schema([
        pa.field("id", pa.string(), nullable=False),
        pa.field("backend", pa.string()),
        pa.field("kind", pa.string()),
        pa.field("task", pa.string()),
        pa.field("feasible", pa.bool_()),
        pa.field("scope", pa.string()),
        pa.field("embedding", pa.list_(pa.float32(), dim)),
    ])


def recall_rows(items: pa.Table, dim: int) -> pa.Table:
    """Recall rows of items-table rows (their FILTER_COLUMNS and embedding)."""
    _, feasible, scope = item_filters(items)
    return pa.table({"id": items["id"], "backend": items["backend"], "kind": items["kind"],
                     "task": items["task_id"], "feasible": feasible, "scope": scope,
                     "embedding": items["embedding"]}, schema=recall_schema(dim))


def _quoted(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def where_sql(where: RecallFilter) -> str:
    """`VectorIndex.mask` as LanceDB's SQL filter, over the recall table's columns."""
    parts = [f"backend = {_quoted(where.backend)}", f"kind IN ({', '.join(map(_quoted, where.kinds))})"]
    if where.exclude_task_id is not None:
        parts.append(f"(task IS NULL OR task != {_quoted(where.exclude_task_id)})")
    if where.feasible_traces_only and "trace" in where.kinds:
        parts.append("(kind != 'trace' OR feasible)")
    if where.scopes is not None:
        listed = f" OR scope IN ({', '.join(map(_quoted, where.scopes))})" if where.scopes else ""
        parts.append(f"(scope IS NULL{listed})")
    return " AND ".join(parts)


def recall_table_exists(db: Any) -> bool:
    return RECALL in db.list_tables().tables


class RecallTable:
    """The recall table of one bank, through the bank's LanceDB connection. Writes (`build`,
    `merge`, `refresh`) hold `lock`: the bank's writer serialises them."""

    def __init__(self, db: Any, dim: int, config: MemoryConfig):
        self.db, self.dim, self.config = db, dim, config
        self.lock = threading.Lock()
        self.table: Any = db.open_table(RECALL) if recall_table_exists(db) else None

    @property
    def exists(self) -> bool:
        return self.table is not None

    def build(self, batches: Iterator[pa.Table]) -> None:
        """(Re)write the table from recall-row batches, then index it."""
        schema = recall_schema(self.dim)
        reader = pa.RecordBatchReader.from_batches(
            schema, (batch for table in batches for batch in table.cast(schema).to_batches()))
        with self.lock:
            self.table = self.db.create_table(RECALL, data=reader, schema=schema, mode="overwrite")
            self._index()

    def partitions(self, rows: int) -> int:
        wanted = self.config.recall_index_partitions or round(math.sqrt(rows))
        return max(1, min(wanted, MAX_PARTITIONS, rows))

    def _index(self) -> None:
        from lancedb.index import Bitmap, BTree, IvfSq

        rows = self.table.count_rows()
        if rows:
            self.table.create_index("embedding", config=IvfSq(distance_type="cosine",
                                                              num_partitions=self.partitions(rows)),
                                    replace=True, name=INDEX_NAME)
            for column in SCALAR_INDEXED:  # the prefilter's columns: bitmaps (few values), a BTREE for tasks
                self.table.create_index(column, config=BTree() if column == "task" else Bitmap(), replace=True)

    def merge(self, rows: pa.Table) -> None:
        """Insert new rows and overwrite the rows of ids already present (one commit)."""
        if rows.num_rows:
            with self.lock:
                (self.table.merge_insert("id").when_matched_update_all().when_not_matched_insert_all()
                 .execute(rows.cast(recall_schema(self.dim))))

    def delete(self, ids: list[str]) -> None:
        with self.lock:
            for start in range(0, len(ids), 500):
                self.table.delete(f"id IN ({', '.join(map(_quoted, ids[start:start + 500]))})")

    def refresh(self) -> None:
        """LanceDB's optimize: new rows into the vector index (incrementally, no retraining),
        small files merged, versions older than `version_retention_s` dropped."""
        with self.lock:
            if not self.has_index():
                self._index()
            self.table.optimize(cleanup_older_than=timedelta(seconds=self.config.version_retention_s))

    def ensure_indexes(self) -> None:
        """The prefilter's scalar indexes on a table built before them (a writer's opening)."""
        from lancedb.index import Bitmap, BTree

        present = {column for index in self.table.list_indices() for column in index.columns}
        missing = [column for column in SCALAR_INDEXED if column not in present]
        with self.lock:
            for column in missing:
                self.table.create_index(column, config=BTree() if column == "task" else Bitmap(), replace=True)

    def has_index(self) -> bool:
        return any(index.name == INDEX_NAME for index in self.table.list_indices())

    def ids(self) -> pa.Array:
        if self.table is None:
            return pa.array([], pa.string())
        return self.table.search().select(["id"]).limit(None).to_arrow()["id"].combine_chunks()

    def search(self, query: np.ndarray, limit: int, where: str | None) -> tuple[list[str], np.ndarray]:
        """The `limit` nearest rows (ids, cosine similarities), most similar first: from the
        index's `recall_nprobes` nearest partitions, re-ranked by the stored vectors; with
        `where` as a prefilter, more partitions (up to `recall_max_nprobes`) while too few
        eligible rows were found. Rows the index does not cover yet are searched exactly."""
        config = self.config
        builder = (self.table.search(np.asarray(query, dtype=np.float32), vector_column_name="embedding")
                   .distance_type("cosine").select(["id", "_distance"]).limit(limit).refine_factor(config.recall_refine_factor))
        if where is None:
            builder = builder.nprobes(config.recall_nprobes)
        else:
            builder = (builder.where(where, prefilter=True).minimum_nprobes(config.recall_nprobes)
                       .maximum_nprobes(max(config.recall_max_nprobes, config.recall_nprobes)))
        found = builder.to_arrow()
        return found["id"].to_pylist(), 1.0 - found["_distance"].to_numpy(zero_copy_only=False).astype(np.float32)

    def search_many(self, queries: np.ndarray, limit: int) -> list[tuple[list[str], np.ndarray]]:
        """`search` without a filter for several query vectors in one LanceDB query."""
        if len(queries) == 1:
            return [self.search(queries[0], limit, None)]
        found = (self.table.search(list(np.asarray(queries, dtype=np.float32)), vector_column_name="embedding")
                 .distance_type("cosine").select(["id", "_distance"]).limit(limit)
                 .refine_factor(self.config.recall_refine_factor).nprobes(self.config.recall_nprobes).to_arrow())
        which = found["query_index"].to_numpy()
        ids = np.asarray(found["id"].to_pylist(), dtype=object)
        sims = 1.0 - found["_distance"].to_numpy(zero_copy_only=False).astype(np.float32)
        out = []
        for i in range(len(queries)):
            mine = np.flatnonzero(which == i)
            mine = mine[np.argsort(-sims[mine], kind="stable")]
            out.append((ids[mine].tolist(), sims[mine]))
        return out

    def prewarm(self) -> None:
        """Read the vector index's files ahead (LanceDB reads them as queries ask otherwise)."""
        if self.table is not None and self.has_index():
            started = time.perf_counter()
            self.table.prewarm_index(INDEX_NAME)
            log.info("recall index read ahead", seconds=round(time.perf_counter() - started, 2))

    def state(self) -> dict[str, Any]:
        """Rows, indexed rows and the index's type and partitions (for `evokernel memory stats`)."""
        if self.table is None:
            return {"rows": 0}
        index = next((i for i in self.table.list_indices() if i.name == INDEX_NAME), None)
        state: dict[str, Any] = {"rows": self.table.count_rows()}
        if index is not None:
            stats = self.table.index_stats(INDEX_NAME)
            state.update(index=INDEX_TYPE, indexed_rows=stats.num_indexed_rows,
                         unindexed_rows=stats.num_unindexed_rows)
        return state

