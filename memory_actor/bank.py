"""MemoryBank: the in-process memory. State lives in memory (items, an embedding matrix with Q
values and visits); durability comes from LanceDB: items are written when added, every update
and retrieval context is appended to the log table, and the log is folded into the items table
in batches. A restarted bank rebuilds its memory from the items table plus the log.

Opening a bank (the writer's lease or read-only, the embedder check) is in bank_open.py;
retrieval (phase 1 and 2, the slot decision, the API items) in bank_retrieval.py; the durable log
(replay, group commit, folds, compaction) in journal.py.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import numpy as np
import pyarrow as pa
import structlog

from memory_actor.api_lookup import ApiNameIndex
from memory_actor.bank_open import open_store, stored_items
from memory_actor.bank_retrieval import BankRetrieval
from memory_actor.config import MemoryConfig
from memory_actor.disk.bank_errors import open_failure
from memory_actor.embeddings import Embedder, embedder_identity, make_embedder
from memory_actor.index import STAGE_ROW, VectorIndex
from memory_actor.items import MemoryItem, items_to_arrow, utc_now
from memory_actor.journal import BankJournal
from memory_actor.messages import BankStats, UpdateAck, ValueUpdate
from memory_actor.provenance import ancestor_credit, shown_credit
from memory_actor.recall.bank_mixin import IndexedBank
from memory_actor.scope import item_scope
from memory_actor.slots import SlotStats, example_option_of, slot_kernel_key, slot_success
from memory_actor.values import RewardNormaliser, RewardShaper, is_feasible_trace, q_update

log = structlog.get_logger("evokernel.memory.bank")

SEEN_UPDATES_KEPT = 200_000


class MemoryBank(BankRetrieval, BankJournal, IndexedBank):
    def __init__(self, config: MemoryConfig, embedder: Embedder | None = None, *, read_only: bool = False,
                 owner: str | None = None):
        """`read_only`: inspect a bank without writing to it (no lease, nothing written on open or
        close); otherwise this process becomes its one writer (`owner` names it in the lease)."""
        self.config = config
        self.identity = embedder_identity(config)
        self._embedder = embedder
        self.store, self.dim, meta = open_store(config, lambda: self.embedder.dim, read_only=read_only, owner=owner)
        folded = meta.get("folded", {})
        self.seq = self.durable_seq = int(folded.get("seq", 0))
        self.updates_applied = int(folded.get("updates", 0))
        self.shaper = RewardShaper.from_state(config, folded)  # normaliser and per-stage baselines
        self.slots = SlotStats(folded.get("slots"))  # the worked-example slot's outcomes (slots.py)
        self.slot_kernels: dict[tuple[str, str, str], list[str]] = {}  # (backend, family, shape) -> trace ids
        self.slot_examples: dict[tuple[str, str], set[str]] = {}  # (backend, family) -> example item ids
        self.task_kernels: dict[tuple[str, str], list[str]] = {}  # (backend, task id) -> feasible trace ids
        self.index = VectorIndex(self.dim)
        self.items: dict[str, MemoryItem] = {}  # without embeddings; Q and visits live in the index
        self.children_of: dict[str, list[str]] = {}
        self.api = ApiNameIndex()
        self.retrievals: OrderedDict[str, tuple[int, str, list[str]]] = OrderedDict()
        self.seen_updates: OrderedDict[str, UpdateAck] = OrderedDict()
        self.pending: list[dict[str, Any]] = []
        self.dirty: set[str] = set()
        self.log_rows = 0
        self.flushes_since_fold = 0
        self.folding = False
        self.rng = np.random.default_rng(config.seed)
        self.recall = None  # a bank of memory.recall_index_min_items or more: recall through LanceDB's index
        try:
            self._load()
        except Exception as exc:  # a data file the storage cannot read: one line naming the bank
            self.store.close()
            raise open_failure(exc, config.uri) from exc

    # -- start-up --------------------------------------------------------------------------------
    @property
    def normaliser(self) -> RewardNormaliser:
        return self.shaper.normaliser

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = make_embedder(self.config)
        return self._embedder

    def _load(self) -> None:
        if not self._open_indexed():  # memory_actor/recall/: a large bank's columns, no embeddings or texts
            items, vectors = stored_items(self.store, self.dim)
            if items:
                self._index_items(items, vectors)
        self._replay_log()
        log.info("memory bank opened", uri=self.config.uri, items=len(self.items), log_rows=self.log_rows,
                 seq=self.seq)

    def _index_items(self, items: list[MemoryItem], vectors: np.ndarray) -> None:
        prior = self.shaper.prior
        q = np.array([[item.q_draft if item.q_draft is not None else prior(item) for item in items],
                      [item.q_refine if item.q_refine is not None else prior(item) for item in items]])
        visits = np.array([[item.visits_draft for item in items], [item.visits_refine for item in items]])
        indexed = self.recall is not None
        known = {item.id for item in items if item.id in self.index.row_of} if indexed else set()
        self.index.upsert([item.id for item in items], vectors, [item.kind for item in items],
                          [item.backend for item in items], [item.task_id for item in items], q, visits,
                          feasible=[is_feasible_trace(item) for item in items], scopes=[item_scope(i) for i in items])
        for item in items:
            if indexed:  # the items are on disk, their children found there (memory_actor/recall/)
                previous = item if item.id in known else None
                known.add(item.id)
            else:
                previous = self.items.get(item.id)
            self.items[item.id] = item if item.embedding is None else item.model_copy(update={"embedding": None})
            if not indexed and item.parent_id and (previous is None or previous.parent_id != item.parent_id):
                self.children_of.setdefault(item.parent_id, []).append(item.id)
            if item.kind == "api":
                self.api.add(item.backend, item.id, item.name, "core" in item.tags)
                if example_option_of(item) and "family" in item.tag_values():  # an option of the decision
                    self.slot_examples.setdefault((item.backend, item.tag_values()["family"]), set()).add(item.id)
            if is_feasible_trace(item) and previous is None:
                if item.task_id:  # the operator's own kernels, for another backend's drafts (SlotRequest.cross_backend)
                    self.task_kernels.setdefault((item.backend, item.task_id), []).append(item.id)
                key = slot_kernel_key(item)
                if key is not None:
                    self.slot_kernels.setdefault(key, []).append(item.id)
        if indexed:
            self._indexed_added(items, vectors)

    # -- adding items ----------------------------------------------------------------------------
    def prepare_items(self, items: list[MemoryItem]) -> tuple[list[MemoryItem], np.ndarray]:
        """Items with their priors (by kind and origin) and unit embeddings filled in (embeds those
        without one)."""
        prior = self.shaper.prior
        items = [item.model_copy(update={
            "q_draft": prior(item) if item.q_draft is None else item.q_draft,
            "q_refine": prior(item) if item.q_refine is None else item.q_refine,
        }) for item in items]
        vectors = np.zeros((len(items), self.dim), dtype=np.float32)
        missing = [row for row, item in enumerate(items) if item.embedding is None]
        for row, item in enumerate(items):
            if item.embedding is not None:
                if len(item.embedding) != self.dim:
                    raise ValueError(f"item {item.id}: embedding of {len(item.embedding)} floats, bank wants {self.dim}")
                vectors[row] = item.embedding
        if missing:
            vectors[missing] = self.embedder.embed([items[row].embedding_text() for row in missing])
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        vectors /= np.maximum(norms, 1e-12)
        return items, vectors

    def write_items(self, items: list[MemoryItem], vectors: np.ndarray) -> None:
        """Durably store prepared items (I/O only; safe to run in a thread)."""
        table = items_to_arrow(items, self.dim, vectors)
        if any(item.id in self.items for item in items):
            self.store.upsert_items(table)
            self._write_recall_rows(items, vectors)
        else:
            self.store.add_items(table)

    def index_items(self, items: list[MemoryItem], vectors: np.ndarray) -> list[str]:
        self._index_items(items, vectors)
        if self.recall is not None:  # searched exactly until the next refresh adds them to the index
            self.recall.add_fresh(np.array([self.index.row_of[item.id] for item in items]), vectors)
        self.flushes_since_fold += 1  # an add is a table version too
        return [item.id for item in items]

    def add(self, items: list[MemoryItem]) -> list[str]:
        """Store items (durable on return) and make them retrievable. Returns their ids."""
        if not items:
            return []
        prepared, vectors = self.prepare_items(items)
        self.write_items(prepared, vectors)
        ids = self.index_items(prepared, vectors)
        self._maybe_fold_now()
        if self.refresh_due():
            self.refresh_index()
        return ids

    # -- reading -----------------------------------------------------------------------------------
    def _public(self, item_id: str) -> MemoryItem:
        return self.items[item_id].model_copy(update=self._public_values(item_id))

    def _public_values(self, item_id: str) -> dict[str, Any]:
        row = self.index.row_of[item_id]
        draft, refine = STAGE_ROW["draft"], STAGE_ROW["refine"]
        return {"q_draft": float(self.index.q[draft, row]), "q_refine": float(self.index.q[refine, row]),
                "visits_draft": int(self.index.visits[draft, row]), "visits_refine": int(self.index.visits[refine, row])}

    def get(self, item_id: str, with_embedding: bool = False) -> MemoryItem | None:
        if item_id not in self.items:
            return None
        item = self._public(item_id)
        if with_embedding:
            item.embedding = (self.index.vectors[self.index.row_of[item_id]].tolist() if self.recall is None
                              else self._stored_embedding(item_id))
        return item

    def children(self, item_id: str) -> list[MemoryItem]:
        children = self.children_of.get(item_id, []) if self.recall is None else self._stored_children(item_id)
        return [self._public(child) for child in children]

    def api_items(self, backend: str, names: list[str] | None = None, core: bool = True) -> list[MemoryItem]:
        """The backend's core bundle items (if `core`) and the API items named exactly in `names`."""
        ids = list(self.api.core.get(backend, [])[: self.config.api_bundle_size]) if core else []
        for item_id in self.api.lookup(backend, names or []):
            if item_id not in ids:
                ids.append(item_id)
        return [self._public(item_id) for item_id in ids]

    def ids(self) -> list[str]:
        return list(self.index.ids)

    def _remember_update(self, ack: UpdateAck) -> None:
        self.seen_updates[ack.update_id] = ack
        while len(self.seen_updates) > SEEN_UPDATES_KEPT:
            self.seen_updates.popitem(last=False)

    # -- value updates -------------------------------------------------------------------------------
    def stage_update(self, update: ValueUpdate) -> UpdateAck:
        """Apply an update in memory and queue its log row (durable at the next flush)."""
        seen = self.seen_updates.get(update.update_id)
        if seen is not None:
            return seen.model_copy(update={"duplicate": True, "durable": seen.seq <= self.durable_seq})
        shown, ignored = shown_credit(update, self.index.row_of, self.retrievals)
        applied, advantage = self.shaper.shape(update.stage, update.reward)
        stage_row = STAGE_ROW[update.stage]
        # (read only where provenance credit needs it: a large bank reads an item from disk)
        attempt = self.items.get(update.attempt_id) if update.attempt_id and self.config.provenance_credit else None
        provenance = ancestor_credit(self.items, attempt, shown, advantage, self.config)
        steps = [(item_id, self.config.alpha, 1) for item_id in shown]
        steps += [(item_id, self.config.alpha * weight, 0) for item_id, weight in provenance]  # no visit: not shown
        q_values, visit_counts, q_before = [], [], []
        for item_id, alpha, visit in steps:
            row = self.index.row_of[item_id]
            q_before.append(float(self.index.q[stage_row, row]))
            q = q_update(q_before[-1], advantage, alpha)
            visits = int(self.index.visits[stage_row, row]) + visit
            self.index.set_value(update.stage, row, q, visits)
            q_values.append(q)
            visit_counts.append(visits)
            self.dirty.add(item_id)
        self.seq += 1
        self.updates_applied += 1
        baseline = self.shaper.baselines[update.stage]
        self.pending.append(self._log_row(
            "update", update.update_id, update.stage, item_ids=[item_id for item_id, _, _ in steps],
            shown=len(shown), retrieval_id=update.retrieval_id, reward=update.reward, applied=applied,
            advantage=advantage, q=q_values, visits=visit_counts, base_count=baseline.count, base_mean=baseline.mean,
            before=q_before))
        if update.slot is not None:  # a draft's, or a refinement's (issue 65: its success a fraction)
            # The slot's outcome: counts, absolute like q (replay is idempotent), in a row of its own.
            changed = self.slots.record(update.slot, slot_success(update.stage, update.reward))
            self.seq += 1
            self.pending.append(self._log_row("slot", update.update_id, update.stage, item_ids=list(changed),
                                              visits=[n for _, n in changed.values()],
                                              q=[float(s) for s, _ in changed.values()]))
        ack = UpdateAck(update_id=update.update_id, seq=self.seq, item_ids=shown, reward_applied=applied,
                        advantage=advantage, ignored_ids=ignored, provenance_ids=[item_id for item_id, _ in provenance],
                        durable=False)
        self._remember_update(ack)
        return ack

    def update(self, update: ValueUpdate) -> UpdateAck:
        """Apply an update and make it durable before returning."""
        ack = self.stage_update(update)
        self.flush()
        return ack.model_copy(update={"durable": True})

    def _log_row(self, kind: str, ref_id: str, stage: str, **fields: Any) -> dict[str, Any]:
        return {"seq": self.seq, "type": kind, "ref_id": ref_id, "stage": stage, "at": utc_now(),
                "norm_count": self.normaliser.count, "norm_mean": self.normaliser.mean, "norm_m2": self.normaliser.m2,
                **fields}
    # -- inspection ----------------------------------------------------------------------------------
    def stats(self, disk: bool = True) -> BankStats:
        return BankStats(
            uri=self.config.uri, items=len(self.items), items_by_kind=self.index.counts("kind"),
            items_by_backend=self.index.counts("backend"),
            embedding_dim=self.dim, embedder=self.identity, updates=self.updates_applied, last_seq=self.seq,
            pending_log_rows=len(self.pending), log_rows=self.log_rows,
            versions=self.store.versions() if disk else {}, bank_bytes=self.store.size_bytes() if disk else None,
            refine_reward_mean=self.normaliser.mean, refine_reward_std=self.normaliser.std,
            refine_rewards_seen=self.normaliser.count,
            baselines={stage: baseline.mean for stage, baseline in self.shaper.baselines.items()},
            slots=self.slots.state(),
        )

    def export_rows(self) -> list[dict[str, Any]]:
        """Every item with its current values and embedding, JSON-ready."""
        if self.recall is not None:
            return self._stored_rows()
        return [self.get(item_id, with_embedding=True).model_dump(mode="json") for item_id in self.index.ids]

    def items_table(self) -> pa.Table:
        return self.store.read_items()
