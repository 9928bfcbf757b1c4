"""The in-memory side of the bank: a matrix of unit embeddings with Q values, visits and filter
codes per row. Rebuilt from LanceDB on start; recall is one matrix-vector product."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from memory_actor.items import ITEM_KINDS, VALUE_STAGES

STAGE_ROW = {stage: row for row, stage in enumerate(VALUE_STAGES)}
KIND_CODE = {kind: code for code, kind in enumerate(ITEM_KINDS)}


class _Codes:
    """Small integer codes for strings (backends, task ids), so filters are vectorised."""

    def __init__(self) -> None:
        self.code_of: dict[str | None, int] = {None: 0}

    def code(self, value: str | None) -> int:
        return self.code_of.setdefault(value, len(self.code_of))

    def get(self, value: str | None) -> int:
        return self.code_of.get(value, -1)


class VectorIndex:
    def __init__(self, dim: int, capacity: int = 1024):
        self.dim = dim
        self.ids: list[str] = []
        self.row_of: dict[str, int] = {}
        self.vectors = np.zeros((capacity, dim), dtype=np.float32)
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

    def __len__(self) -> int:
        return len(self.ids)

    def _grow(self, needed: int) -> None:
        capacity = self.vectors.shape[0]
        if needed <= capacity:
            return
        new_capacity = max(needed, capacity * 2)

        def grown(array: np.ndarray, axis: int) -> np.ndarray:
            shape = list(array.shape)
            shape[axis] = new_capacity
            out = np.zeros(shape, dtype=array.dtype)
            out[(slice(None),) * axis + (slice(0, capacity),)] = array
            return out

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
        rows = []
        fresh = [item_id for item_id in dict.fromkeys(ids) if item_id not in self.row_of]
        self._grow(len(self.ids) + len(fresh))
        for item_id in fresh:
            self.row_of[item_id] = len(self.ids)
            self.ids.append(item_id)
        rows = np.fromiter((self.row_of[item_id] for item_id in ids), dtype=np.int64, count=len(ids))
        self.vectors[rows] = vectors
        self.q[:, rows] = q
        self.visits[:, rows] = visits
        self.kind[rows] = [KIND_CODE[kind] for kind in kinds]
        self.backend[rows] = [self._backends.code(backend) for backend in backends]
        self.task[rows] = [self._tasks.code(task_id) for task_id in task_ids]
        self.feasible[rows] = False if feasible is None else np.asarray(feasible, dtype=bool)
        self.scope[rows] = 0 if scopes is None else [self._scopes.code(scope) for scope in scopes]

    def mask(self, backend: str, kinds: Sequence[str], exclude_task_id: str | None = None,
             n: int | None = None, feasible_traces_only: bool = False,
             scopes: Sequence[str] | None = None) -> np.ndarray:
        """Which of the first n rows (default: all) pass the filters. The recall's prefilter: the
        pool is then filled from eligible rows only, so it never comes back short of them."""
        n = len(self.ids) if n is None else n
        keep = self.backend[:n] == self._backends.get(backend)
        keep &= np.isin(self.kind[:n], [KIND_CODE[kind] for kind in kinds])
        if exclude_task_id is not None:
            keep &= self.task[:n] != self._tasks.get(exclude_task_id)
        if feasible_traces_only and "trace" in kinds:
            keep &= (self.kind[:n] != KIND_CODE["trace"]) | self.feasible[:n]
        if scopes is not None:  # unscoped rows, or rows of one of these scopes
            keep &= np.isin(self.scope[:n], [0, *(self._scopes.get(scope) for scope in scopes)])
        return keep

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
