"""The in-memory side of the bank: a matrix of unit embeddings with Q values, visits and filter
codes per row. Rebuilt from LanceDB on start; recall is one matrix-vector product.

A bank recalled through LanceDB's vector index (memory_actor/recall/) keeps the same
rows without the matrix (`keep_vectors=False`): Q values, visits and filter codes only, loaded
column by column (`load`); its recall filters candidates with `keep_rows`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from memory_actor.items import ITEM_KINDS, VALUE_STAGES

STAGE_ROW = {stage: row for row, stage in enumerate(VALUE_STAGES)}
KIND_CODE = {kind: code for code, kind in enumerate(ITEM_KINDS)}


class _Codes:
    """Small integer codes for strings (backends, task ids), so filters are vectorised."""

    def __init__(self) -> None:
        self.code_of: dict[str | None, int] = {None: 0}
        self._values: list[str | None] = [None]

    def code(self, value: str | None) -> int:
        return self.code_of.setdefault(value, len(self.code_of))

    def get(self, value: str | None) -> int:
        return self.code_of.get(value, -1)

    def value_of(self, code: int) -> str | None:
        if len(self._values) != len(self.code_of):
            self._values = list(self.code_of)  # insertion order is code order
        return self._values[code]

    def codes(self, values: Sequence[str | None]) -> np.ndarray:
        return np.fromiter((self.code(value) for value in values), dtype=np.int32, count=len(values))


@dataclass(frozen=True)
class RecallFilter:
    """Which items a recall may return (`VectorIndex.mask`): the recall's prefilter."""

    backend: str
    kinds: tuple[str, ...]
    exclude_task_id: str | None = None
    feasible_traces_only: bool = False
    scopes: tuple[str, ...] | None = None


class VectorIndex:
    def __init__(self, dim: int, capacity: int = 1024, keep_vectors: bool = True):
        self.dim = dim
        self.keep_vectors = keep_vectors
        self.ids: list[str] = []
        self.row_of: dict[str, int] = {}
        self.vectors = np.zeros((capacity if keep_vectors else 0, dim), dtype=np.float32)
        self.q = np.zeros((len(VALUE_STAGES), capacity), dtype=np.float64)
        self.visits = np.zeros((len(VALUE_STAGES), capacity), dtype=np.int64)
        self.kind = np.zeros(capacity, dtype=np.int8)
        self.backend = np.zeros(capacity, dtype=np.int32)
        self.task = np.zeros(capacity, dtype=np.int32)
        self.feasible = np.zeros(capacity, dtype=bool)  # traces that passed all gates (exemplar code)
        self.scope = np.zeros(capacity, dtype=np.int32)  # memory_actor/scope.py: 0 unscoped
        self._backends = _Codes()
        self._tasks = _Codes()
        self._scopes = _Codes()
        self._class_counts: dict[tuple[int, int, bool, int], int] = {}

    def __len__(self) -> int:
        return len(self.ids)

    def _grow(self, needed: int) -> None:
        capacity = self.kind.shape[0]
        if needed <= capacity:
            return
        new_capacity = max(needed, capacity * 2)

        def grown(array: np.ndarray, axis: int) -> np.ndarray:
            shape = list(array.shape)
            shape[axis] = new_capacity
            out = np.zeros(shape, dtype=array.dtype)
            out[(slice(None),) * axis + (slice(0, capacity),)] = array
            return out

        if self.keep_vectors:
            self.vectors = grown(self.vectors, 0)
        self.q, self.visits = grown(self.q, 1), grown(self.visits, 1)
        self.kind, self.backend, self.task = grown(self.kind, 0), grown(self.backend, 0), grown(self.task, 0)
        self.feasible, self.scope = grown(self.feasible, 0), grown(self.scope, 0)

    def upsert(self, ids: Sequence[str], vectors: np.ndarray, kinds: Sequence[str], backends: Sequence[str],
               task_ids: Sequence[str | None], q: np.ndarray, visits: np.ndarray,
               feasible: Sequence[bool] | None = None, scopes: Sequence[str | None] | None = None) -> None:
        """Add rows (or overwrite the rows of ids already present). q and visits: (2, len(ids));
        feasible: whether each is a trace that passed all gates (default: none is); scopes: where
        each may be shown (memory_actor/scope.py; default: anywhere)."""
        if vectors.shape != (len(ids), self.dim):
            raise ValueError(f"expected vectors of shape ({len(ids)}, {self.dim}), got {vectors.shape}")
        known = np.fromiter((self.row_of[item_id] for item_id in dict.fromkeys(ids) if item_id in self.row_of),
                            dtype=np.int64)
        self._count_classes(known, -1)
        fresh = [item_id for item_id in dict.fromkeys(ids) if item_id not in self.row_of]
        self._grow(len(self.ids) + len(fresh))
        for item_id in fresh:
            self.row_of[item_id] = len(self.ids)
            self.ids.append(item_id)
        rows = np.fromiter((self.row_of[item_id] for item_id in ids), dtype=np.int64, count=len(ids))
        if self.keep_vectors:
            self.vectors[rows] = vectors
        self.q[:, rows] = q
        self.visits[:, rows] = visits
        self.kind[rows] = [KIND_CODE[kind] for kind in kinds]
        self.backend[rows] = [self._backends.code(backend) for backend in backends]
        self.task[rows] = [self._tasks.code(task_id) for task_id in task_ids]
        self.feasible[rows] = False if feasible is None else np.asarray(feasible, dtype=bool)
        self.scope[rows] = 0 if scopes is None else [self._scopes.code(scope) for scope in scopes]
        self._count_classes(np.unique(rows), 1)

    def load(self, ids: list[str], kinds: np.ndarray, backends: pa.Array, task_ids: pa.Array, q: np.ndarray,
             visits: np.ndarray, feasible: np.ndarray, scopes: pa.Array) -> None:
        """Fill an empty index column by column (a bank opened for indexed recall: no vectors).
        kinds: kind codes (KIND_CODE); backends, task_ids, scopes: string columns (null: None)."""
        if self.ids:
            raise ValueError("load fills an empty index")
        n = len(ids)
        self._grow(n)
        self.ids = ids
        self.row_of = {item_id: row for row, item_id in enumerate(ids)}
        if len(self.row_of) != n:
            raise ValueError("load: ids repeat")
        self.q[:, :n], self.visits[:, :n] = q, visits
        self.kind[:n], self.feasible[:n] = kinds, feasible
        for target, codes, column in ((self.backend, self._backends, backends), (self.task, self._tasks, task_ids),
                                      (self.scope, self._scopes, scopes)):
            encoded = column.dictionary_encode() if n else pa.array([], pa.string()).dictionary_encode()
            if isinstance(encoded, pa.ChunkedArray):
                encoded = encoded.combine_chunks()
            mapping = np.append(codes.codes(encoded.dictionary.to_pylist()), 0)  # null -> code 0 (None)
            indices = encoded.indices.fill_null(len(mapping) - 1).to_numpy(zero_copy_only=False)
            target[:n] = mapping[indices]
        self._count_classes(np.arange(n), 1)

    def mask(self, backend: str, kinds: Sequence[str], exclude_task_id: str | None = None,
             n: int | None = None, feasible_traces_only: bool = False,
             scopes: Sequence[str] | None = None) -> np.ndarray:
        """Which of the first n rows (default: all) pass the filters. The recall's prefilter: the
        pool is then filled from eligible rows only, so it never comes back short of them."""
        n = len(self.ids) if n is None else n
        return self._keep(slice(0, n), RecallFilter(backend, tuple(kinds), exclude_task_id, feasible_traces_only,
                                                    None if scopes is None else tuple(scopes)))

    def keep_rows(self, rows: np.ndarray, where: RecallFilter) -> np.ndarray:
        """`mask` for the given rows only (an indexed recall's candidates)."""
        return self._keep(rows, where)

    def _keep(self, at: slice | np.ndarray, where: RecallFilter) -> np.ndarray:
        keep = self.backend[at] == self._backends.get(where.backend)
        keep &= np.isin(self.kind[at], [KIND_CODE[kind] for kind in where.kinds])
        if where.exclude_task_id is not None:
            keep &= self.task[at] != self._tasks.get(where.exclude_task_id)
        if where.feasible_traces_only and "trace" in where.kinds:
            keep &= (self.kind[at] != KIND_CODE["trace"]) | self.feasible[at]
        if where.scopes is not None:  # unscoped rows, or rows of one of these scopes
            keep &= np.isin(self.scope[at], [0, *(self._scopes.get(scope) for scope in where.scopes)])
        return keep

    def eligible_share(self, where: RecallFilter) -> float:
        """About which share of the rows `where` keeps, from the counts per (backend, kind,
        feasible, scope) class (the excluded task left out): a recall's oversampling."""
        n = len(self.ids)
        if not n:
            return 0.0
        backend = self._backends.get(where.backend)
        kinds = {KIND_CODE[kind] for kind in where.kinds}
        trace = KIND_CODE["trace"]
        scopes = None if where.scopes is None else {0, *(self._scopes.get(scope) for scope in where.scopes)}
        kept = sum(count for (b, k, feasible, scope), count in self._class_counts.items()
                   if b == backend and k in kinds and (feasible or k != trace or not where.feasible_traces_only)
                   and (scopes is None or scope in scopes))
        return kept / n

    def class_counts(self) -> dict[tuple[int, int, bool, int], int]:
        """Rows per (backend code, kind code, feasible, scope code); kept current by `upsert` and `load`."""
        return self._class_counts

    def _count_classes(self, rows: np.ndarray, sign: int) -> None:
        key = ((self.backend[rows].astype(np.int64) << 40) | (self.kind[rows].astype(np.int64) << 36)
               | (self.feasible[rows].astype(np.int64) << 35) | self.scope[rows].astype(np.int64))
        values, counts = np.unique(key, return_counts=True)
        for value, count in zip(values.tolist(), counts.tolist(), strict=True):
            cls = (value >> 40, (value >> 36) & 15, bool((value >> 35) & 1), value & ((1 << 35) - 1))
            self._class_counts[cls] = self._class_counts.get(cls, 0) + sign * count

    def counts(self, column: str) -> dict[str, int]:
        """Rows per kind ('kind') or per backend ('backend'), without rows taken out of reach
        (a negative backend code: memory_actor.retraction)."""
        n = len(self.ids)
        live = self.backend[:n] >= 0
        if column == "kind":
            found = np.bincount(self.kind[:n][live], minlength=len(ITEM_KINDS))
            return {kind: int(found[code]) for kind, code in KIND_CODE.items() if found[code]}
        found = np.bincount(self.backend[:n][live], minlength=len(self._backends.code_of))
        return {str(self._backends.value_of(code)): int(c) for code, c in enumerate(found) if c}

    def task_id(self, row: int) -> str | None:
        return self._tasks.value_of(int(self.task[row]))

    def filter_values(self, rows: np.ndarray) -> dict[str, list]:
        """The filter columns of `rows` as the recall table stores them (memory_actor/recall/table.py)."""
        rows = np.asarray(rows, dtype=np.int64)
        return {"id": [self.ids[row] for row in rows.tolist()],
                "backend": [self._backends.value_of(code) for code in self.backend[rows].tolist()],
                "kind": [ITEM_KINDS[code] for code in self.kind[rows].tolist()],
                "task": [self._tasks.value_of(code) for code in self.task[rows].tolist()],
                "feasible": self.feasible[rows].tolist(),
                "scope": [self._scopes.value_of(code) for code in self.scope[rows].tolist()]}

    def similarities(self, queries: np.ndarray, n: int) -> np.ndarray:
        """(len(queries), n) cosine similarities of unit queries with the first n rows: one pass over
        the matrix serves a whole batch. Reads only, so it may run in a thread while rows are added."""
        return queries.astype(np.float32, copy=False) @ self.vectors[:n].T

    @staticmethod
    def top_k(sims: np.ndarray, keep: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Rows of the k most similar kept rows, most similar first, with their similarities."""
        candidates = int(keep.sum())
        if k <= 0 or candidates == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        if candidates < len(sims):
            sims = np.where(keep, sims, -np.inf)
        k = min(k, candidates)
        top = np.argpartition(-sims, k - 1)[:k] if k < len(sims) else np.arange(len(sims))
        top = top[np.isfinite(sims[top])]
        rows = top[np.argsort(-sims[top], kind="stable")]
        return rows, sims[rows]

    def value(self, stage: str, rows: np.ndarray) -> np.ndarray:
        return self.q[STAGE_ROW[stage], rows]

    def set_value(self, stage: str, row: int, q: float, visits: int) -> None:
        self.q[STAGE_ROW[stage], row] = q
        self.visits[STAGE_ROW[stage], row] = visits
