"""Reading a large bank's items table column by column (issue 68): the filter codes, Q values and
visits the actor keeps, without building an item (or reading an embedding) per row.

`item_filters` computes, vectorised, what `values.is_feasible_trace` and `scope.item_scope` say
of each row; the recall table (recall_table.py) stores the same columns for its prefilter.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from memory_actor.index import KIND_CODE, VectorIndex
from memory_actor.items import MemoryItem, items_from_arrow
from memory_actor.scope import TEACHING_LESSONS
from memory_actor.values import FEASIBLE_GATE

FILTER_COLUMNS = ["id", "kind", "backend", "task_id", "stage", "tags", "verdict"]
VALUE_COLUMNS = ["q_draft", "q_refine", "visits_draft", "visits_refine"]


def tag_value(tags: pa.Array, key: str) -> pa.Array:
    """Per row, the value of its last `key:` tag (what MemoryItem.tag_values gives), else null."""
    tags = tags.combine_chunks() if isinstance(tags, pa.ChunkedArray) else tags
    n = len(tags)
    flat, parents = pc.list_flatten(tags), pc.list_parent_indices(tags)
    hit = pc.fill_null(pc.starts_with(flat, f"{key}:"), False)
    values = pc.utf8_slice_codeunits(pc.filter(flat, hit), len(key) + 1).to_numpy(zero_copy_only=False)
    rows = pc.filter(parents, hit).to_numpy()
    out = np.full(n, None, dtype=object)
    if len(rows):
        last = len(rows) - 1 - np.unique(rows[::-1], return_index=True)[1]  # the last tag of each row wins
        out[rows[last]] = values[last]
    return pa.array(out, type=pa.string())


def item_filters(table: pa.Table) -> tuple[np.ndarray, np.ndarray, pa.Array]:
    """Kind codes, whether each row is a feasible trace, and its scope (memory_actor/scope.py: null
    unscoped, '-' never shown), for a table with FILTER_COLUMNS."""
    kind = table["kind"].combine_chunks()
    codes = np.full(len(kind), -1, dtype=np.int8)
    kinds = kind.to_numpy(zero_copy_only=False)
    for name, code in KIND_CODE.items():
        codes[kinds == name] = code
    is_trace, is_lesson = pc.equal(kind, "trace"), pc.equal(kind, "experience")
    gate = pc.struct_field(table["verdict"].combine_chunks(), "gate")
    feasible = pc.fill_null(pc.and_(is_trace, pc.equal(gate, FEASIBLE_GATE)), False).to_numpy(zero_copy_only=False)
    tags = table["tags"]
    family, shape, lesson = tag_value(tags, "family"), tag_value(tags, "shape"), tag_value(tags, "lesson")
    has_family = pc.is_valid(family)
    trace_scope = pc.binary_join_element_wise("trace", family, pc.fill_null(shape, ""), "/")
    teaches = pc.and_(pc.fill_null(pc.is_in(lesson, pa.array(TEACHING_LESSONS)), False), has_family)
    lesson_scope = pc.binary_join_element_wise("lesson", family, table["stage"].combine_chunks(), "/")
    none = pa.nulls(len(kind), pa.string())
    scope = pc.if_else(is_trace, pc.if_else(has_family, trace_scope, "-"),
                       pc.if_else(is_lesson, pc.if_else(teaches, lesson_scope, "-"), none))
    return codes, feasible, scope


@dataclass
class LoadedColumns:
    """What `load_index` found beside the index rows: the rows of api items (few: the bundles'
    knowledge, read in full by the bank) and the feasible kernels per (backend, family, shape),
    in table order."""

    api_rows: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    kernels: dict[tuple[str, str, str], list[str]] = field(default_factory=dict)
    task_kernels: dict[tuple[str, str], list[str]] = field(default_factory=dict)


def load_index(items: pa.Table, index: VectorIndex, prior: Callable[[MemoryItem], float]) -> LoadedColumns:
    """Fill the empty `index` from the items table's FILTER_COLUMNS and VALUE_COLUMNS (`items`,
    without embeddings or texts); `prior(item)` gives the Q of a row stored without one."""
    codes, feasible, scope = item_filters(items)
    q = np.vstack([items[c].to_numpy(zero_copy_only=False).astype(np.float64) for c in VALUE_COLUMNS[:2]])
    visits = np.vstack([pc.fill_null(items[c], 0).to_numpy(zero_copy_only=False).astype(np.int64)
                        for c in VALUE_COLUMNS[2:]])
    missing = np.flatnonzero(np.isnan(q).any(axis=0))  # rows stored without values: their priors
    if len(missing):
        for row, item in zip(missing, items_from_arrow(items.take(missing), with_embedding=False, trusted=True),
                             strict=True):
            q[:, row] = [item.q_draft if item.q_draft is not None else prior(item),
                         item.q_refine if item.q_refine is not None else prior(item)]
    ids = items["id"].to_pylist()
    index.load(ids, codes, items["backend"], items["task_id"], q, visits, feasible, scope)
    loaded = LoadedColumns()
    loaded.api_rows = np.flatnonzero(codes == KIND_CODE["api"])
    kernels = np.flatnonzero(feasible)
    if len(kernels):
        family = tag_value(items["tags"].take(kernels), "family").to_pylist()
        shape = tag_value(items["tags"].take(kernels), "shape").to_pylist()
        backend = items["backend"].take(kernels).to_pylist()
        task = items["task_id"].take(kernels).to_pylist()
        for row, fam, shp, back, task_id in zip(kernels.tolist(), family, shape, backend, task, strict=True):
            if task_id:  # the operator's own kernels (MemoryBank.task_kernels)
                loaded.task_kernels.setdefault((back, task_id), []).append(index.ids[row])
            if fam is not None:  # memory_actor.slots.slot_kernel_key
                loaded.kernels.setdefault((back, fam, shp or ""), []).append(index.ids[row])
    return loaded
