"""Opening a large bank for indexed recall (issue 68): its items table read column by column
into the index (no embedding, no text), the api items in full, and the recall table made to
cover every item: built once from the items table (a bank opened above the threshold for the
first time), caught up with the items added since the last refresh (more than
`recall_refresh_rows`: written now; fewer: held in memory as fresh rows, written by the next
refresh). A read-only opening writes nothing: whatever the table lacks is held fresh.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import structlog
from lancedb.index import BTree

from memory_actor.index import VectorIndex
from memory_actor.items import items_from_arrow
from memory_actor.recall.columns import FILTER_COLUMNS, VALUE_COLUMNS, LoadedColumns, load_index
from memory_actor.recall.indexed import IndexedRecall
from memory_actor.recall.items import LazyItems, _in_list
from memory_actor.recall.table import RecallTable, recall_rows, recall_table_exists

log = structlog.get_logger("evokernel.memory.recall")

BUILD_BATCH = 50_000


def wants_index(store: Any, min_items: int) -> bool:
    """Whether a bank opens for indexed recall: at least `min_items` items, and (read-only) a
    recall table to read (a reader never builds one)."""
    if store.items.count_rows() < min_items:
        return False
    return not store.read_only or recall_table_exists(store.db)


def _item_batches(items_table: Any, dim: int, ids: pa.Array | None = None) -> Iterator[pa.Table]:
    """Recall rows of the items table (of `ids` only, when given), in batches."""
    query = items_table.search().select([*FILTER_COLUMNS, "embedding"]).limit(None)
    for batch in query.to_batches(BUILD_BATCH):
        table = pa.Table.from_batches([batch])
        if ids is not None:
            table = table.filter(pc.is_in(table["id"], value_set=ids))
        if table.num_rows:
            yield recall_rows(table, dim)


def open_indexed(store: Any, dim: int, config: Any, prior: Any) -> tuple[VectorIndex, LazyItems, IndexedRecall,
                                                                             LoadedColumns, pa.Table]:
    """The index, the items, the indexed recall, the kernels found, and the api items' rows (full,
    with embeddings) of the bank in `store`."""
    started = time.perf_counter()
    index = VectorIndex(dim, keep_vectors=False)
    columns = store.items.search().select([*FILTER_COLUMNS, *VALUE_COLUMNS]).limit(None).to_arrow()
    loaded = load_index(columns, index, prior)
    if not store.read_only and not any(i.columns == ["id"] for i in store.items.list_indices()):
        # item texts are read by id (LazyItems); each fold's optimize keeps the index current
        store.items.create_index("id", config=BTree(), replace=True)
    items = LazyItems(store.items, index)
    api = store.items.search().where("kind = 'api'").limit(None).to_arrow()
    table = RecallTable(store.db, dim, config)
    recall = IndexedRecall(table, index, dim)
    if not table.exists:
        built = time.perf_counter()
        table.build(_item_batches(store.items, dim))
        log.info("recall index built", items=len(index), seconds=round(time.perf_counter() - built, 1),
                 partitions=table.partitions(len(index)))
    if not store.read_only:
        table.ensure_indexes()
    recalled_ids = table.ids()
    missing = pc.invert(pc.is_in(columns["id"], value_set=recalled_ids))
    missing_ids = pc.filter(columns["id"], missing).combine_chunks()
    gone = pc.filter(recalled_ids, pc.invert(pc.is_in(recalled_ids, value_set=columns["id"])))
    if len(gone) and not store.read_only:  # items deleted since (memory_actor.retraction): out of the table too
        table.delete(gone.to_pylist())
    if len(missing_ids) > config.recall_refresh_rows and not store.read_only:
        caught = time.perf_counter()
        for rows in _item_batches(store.items, dim, missing_ids):
            table.merge(rows)
        table.refresh()
        log.info("recall index caught up", items=len(missing_ids), seconds=round(time.perf_counter() - caught, 1))
    elif len(missing_ids):
        vectors = _vectors(store.items, missing_ids.to_pylist(), dim)
        recall.add_fresh(np.array([index.row_of[i] for i in missing_ids.to_pylist()], dtype=np.int64), vectors)
    log.info("memory bank opened for indexed recall", items=len(index), fresh=len(recall.fresh_rows),
             seconds=round(time.perf_counter() - started, 2))
    return index, items, recall, loaded, api


def _vectors(items_table: Any, ids: list[str], dim: int) -> np.ndarray:
    """The stored embeddings of `ids`, in that order."""
    found: dict[str, np.ndarray] = {}
    for start in range(0, len(ids), 500):
        batch = ids[start:start + 500]
        rows = items_table.search().where(f"id IN ({_in_list(batch)})").select(["id", "embedding"]).limit(None).to_arrow()
        flat = rows["embedding"].combine_chunks().values.to_numpy(zero_copy_only=False).reshape(-1, dim)
        found.update(zip(rows["id"].to_pylist(), flat, strict=True))
    return np.stack([found[item_id] for item_id in ids]).astype(np.float32) if ids else np.zeros((0, dim), np.float32)


def api_items(api: pa.Table, dim: int) -> tuple[list, np.ndarray]:
    """The api items (full, without embeddings) and their vectors."""
    vectors = api["embedding"].combine_chunks().values.to_numpy(zero_copy_only=False).reshape(-1, dim)
    return items_from_arrow(api, with_embedding=False, trusted=True), vectors.astype(np.float32)
