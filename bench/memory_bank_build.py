"""The memory benchmark's synthetic bank (bench/memory.py): items written straight into a new
bank, with embeddings shaped like a real bank's (`clustered`: each item a shared direction, its
operator's direction and its own noise, weighted so that two items of one operator have cosine
0.92 and two of different operators 0.77, as in the published v3 C bank) or with none
(`random`: independent unit vectors, an index's worst case)."""

from __future__ import annotations

import numpy as np

from memory_actor.disk.store import BankStore
from memory_actor.embeddings import MINILM_DIM
from memory_actor.items import ItemVerdict, MemoryItem, items_to_arrow

BUILD_BATCH = 10_000
TASKS = 200  # synthetic item i belongs to task i % TASKS
# cosine of two items of one operator (SHARED + OPERATOR) and of two operators (SHARED): v3 C bank
SHARED, OPERATOR, OWN = 0.77, 0.15, 0.08


def _unit(rng: np.random.Generator, rows: int) -> np.ndarray:
    vectors = rng.standard_normal((rows, MINILM_DIM)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


class SyntheticEmbeddings:
    """The bank's vectors, batch by batch, the same on every call (so they need not be held),
    and queries for them (module docstring)."""

    def __init__(self, kind: str, seed: int):
        if kind not in ("clustered", "random"):
            raise ValueError(f"embeddings must be clustered or random, not {kind}")
        self.kind, self.seed = kind, seed
        rng = np.random.default_rng([seed, 7])
        self.shared, self.operators = _unit(rng, 1)[0], _unit(rng, TASKS)

    def _mix(self, tasks: np.ndarray, own: np.ndarray) -> np.ndarray:
        mixed = (np.sqrt(SHARED) * self.shared + np.sqrt(OPERATOR) * self.operators[tasks] + np.sqrt(OWN) * own)
        return (mixed / np.linalg.norm(mixed, axis=1, keepdims=True)).astype(np.float32)

    def batch(self, start: int, rows: int) -> np.ndarray:
        own = _unit(np.random.default_rng([self.seed, start]), rows)
        return own if self.kind == "random" else self._mix(np.arange(start, start + rows) % TASKS, own)

    def batches(self, count: int):
        for start in range(0, count, BUILD_BATCH):
            yield start, self.batch(start, min(BUILD_BATCH, count - start))

    def queries(self, rng: np.random.Generator, count: int, unseen: bool = False) -> np.ndarray:
        """Queries of the bank's operators, or (`unseen`) of operators it has never seen: the
        shared direction, a new operator's and noise."""
        own = _unit(rng, count)
        if self.kind == "random":
            return own
        if not unseen:
            return self._mix(rng.integers(0, TASKS, count), own)
        mixed = np.sqrt(SHARED) * self.shared + np.sqrt(OPERATOR) * _unit(rng, count) + np.sqrt(OWN) * own
        return (mixed / np.linalg.norm(mixed, axis=1, keepdims=True)).astype(np.float32)


def feasible_or_no_trace(i: np.ndarray) -> np.ndarray:
    """What a drafting recall keeps of the synthetic items: every lesson and practice, the traces that passed."""
    return (i % 3 != 0) | (i % 6 == 0)


def build_synthetic_bank(uri: str, count: int, seed: int = 0, embeddings: str = "random") -> list[str]:
    """Write `count` synthetic trace/experience/practice items straight into a new bank."""
    vectors = SyntheticEmbeddings(embeddings, seed)
    store = BankStore(uri)
    store.open(MINILM_DIM)
    kinds = ["trace", "experience", "practice"]
    ids: list[str] = []
    for start, batch in vectors.batches(count):
        rows = len(batch)
        # Every other trace passed the gates: drafting recall filters the others out.
        items = [MemoryItem(kind=kinds[i % 3], backend="cpu", task_id=f"task{i % 200}", stage="draft",
                            content=f"synthetic item {i}", summary=f"synthetic {i}", q_draft=0.0, q_refine=0.0,
                            verdict=ItemVerdict(gate="ok" if i % 6 == 0 else "compile") if i % 3 == 0 else None)
                 for i in range(start, start + rows)]
        store.items.add(items_to_arrow(items, MINILM_DIM, batch))
        ids += [item.id for item in items]
    store.close()  # the writer lease: the memory actor becomes the bank's writer next
    return ids
