"""The items of a large bank without their texts in memory (issue 68): `MemoryBank.items` as a
read-through mapping over the items table.

A bank opened for indexed recall keeps per item only its row in the index (values, visits,
filter codes). An item's text is read from the items table when it is asked for (by id, through
a BTREE index on `id`) and kept in a bounded cache; the api items (the bundles' knowledge, looked
up by name in every retrieval) stay resident. The mapping answers membership, length and
iteration from the index, so `id in bank.items`, `len(bank.items)` and `set(bank.items)` cost
no read; `values()` reads the table in batches.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import pyarrow as pa

from memory_actor.index import VectorIndex
from memory_actor.items import MemoryItem, items_from_arrow

CACHE_ITEMS = 4096
LOOKUP_BATCH = 500


def _in_list(ids: Iterable[str]) -> str:
    return ", ".join("'" + item_id.replace("'", "''") + "'" for item_id in ids)


class LazyItems(Mapping[str, MemoryItem]):
    def __init__(self, table: Any, index: VectorIndex, cache_items: int = CACHE_ITEMS):
        self.table, self.index = table, index  # the items table (the writer's handle: it sees its own writes)
        self.resident: dict[str, MemoryItem] = {}
        self.cache: OrderedDict[str, MemoryItem] = OrderedDict()
        self.cache_items = cache_items
        self.lock = threading.Lock()  # retrievals prefetch in a thread while the event loop reads

    def __contains__(self, item_id: object) -> bool:
        return item_id in self.index.row_of

    def __len__(self) -> int:
        return len(self.index)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self.index.ids))

    def __getitem__(self, item_id: str) -> MemoryItem:
        item = self._cached(item_id)
        if item is None:
            if item_id not in self.index.row_of:
                raise KeyError(item_id)
            self.prefetch([item_id])
            item = self._cached(item_id)
            if item is None:
                raise KeyError(item_id)
        return item

    def __setitem__(self, item_id: str, item: MemoryItem) -> None:
        """An item just added (or read): api items stay, the others are cached."""
        with self.lock:
            if item.kind == "api":
                self.resident[item_id] = item
                self.cache.pop(item_id, None)
            else:
                self._cache(item_id, item)

    def _cached(self, item_id: str) -> MemoryItem | None:
        with self.lock:
            item = self.resident.get(item_id)
            if item is None and (item := self.cache.get(item_id)) is not None:
                self.cache.move_to_end(item_id)
            return item

    def _cache(self, item_id: str, item: MemoryItem) -> None:
        self.cache[item_id] = item
        self.cache.move_to_end(item_id)
        while len(self.cache) > self.cache_items:
            self.cache.popitem(last=False)

    def prefetch(self, ids: Iterable[str]) -> None:
        """Read the items among `ids` that are not in memory (one query per LOOKUP_BATCH)."""
        with self.lock:
            wanted = [i for i in dict.fromkeys(ids) if i not in self.resident and i not in self.cache]
        for start in range(0, len(wanted), LOOKUP_BATCH):
            batch = wanted[start:start + LOOKUP_BATCH]
            found = self.read(f"id IN ({_in_list(batch)})")
            with self.lock:
                for item in found:
                    self._cache(item.id, item)

    def read(self, where: str | None = None, with_embedding: bool = False) -> list[MemoryItem]:
        columns = [name for name in self.table.schema.names if with_embedding or name != "embedding"]
        query = self.table.search().select(columns).limit(None)
        table = (query.where(where) if where else query).to_arrow()
        return items_from_arrow(table, with_embedding=with_embedding, trusted=True)

    def values(self) -> Iterator[MemoryItem]:  # type: ignore[override]
        columns = [name for name in self.table.schema.names if name != "embedding"]
        for batch in self.table.search().select(columns).limit(None).to_batches():
            yield from items_from_arrow(pa.Table.from_batches([batch]), with_embedding=False, trusted=True)

    def items(self) -> Iterator[tuple[str, MemoryItem]]:  # type: ignore[override]
        return ((item.id, item) for item in self.values())

    def embedding(self, item_id: str) -> list[float] | None:
        rows = self.table.search().where(f"id = {_in_list([item_id])}").select(["embedding"]).limit(1).to_arrow()
        return rows["embedding"][0].as_py() if rows.num_rows else None
