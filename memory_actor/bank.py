"""MemoryBank: the in-process memory. State lives in memory (items, an embedding matrix with Q
values and visits); durability comes from LanceDB: items are written when added, every update
and retrieval context is appended to the log table, and the log is folded into the items table
in batches. A restarted bank rebuilds its memory from the items table plus the log.

Opening a bank (the writer's lease or read-only, the embedder check) is in bank_open.py; the
durable log (replay, group commit, folds, compaction) is in journal.py.
"""

from __future__ import annotations

from collections import Counter, OrderedDict
from typing import Any

import numpy as np
import pyarrow as pa
import structlog

from memory_actor.api_lookup import ApiNameIndex
from memory_actor.bank_errors import open_failure
from memory_actor.bank_open import open_store, stored_items
from memory_actor.config import MemoryConfig
from memory_actor.embeddings import Embedder, embedder_identity, make_embedder
from memory_actor.index import STAGE_ROW, VectorIndex
from memory_actor.items import MemoryItem, items_to_arrow, new_id, utc_now
from memory_actor.journal import BankJournal
from memory_actor.messages import (
    BankStats,
    Retrieval,
    RetrievalRequest,
    UpdateAck,
    ValueUpdate,
)
from memory_actor.provenance import ancestor_credit, shown_credit
from memory_actor.ranking import recall_pool_size, select
from memory_actor.scope import item_scope, scopes
from memory_actor.slots import (
    GENERIC,
    SlotCandidate,
    SlotChoice,
    SlotRequest,
    SlotStats,
    decide,
    option_key,
    slot_kernel_key,
)
from memory_actor.values import RewardNormaliser, RewardShaper, is_feasible_trace, q_update

log = structlog.get_logger("evokernel.memory.bank")

SEEN_UPDATES_KEPT = 200_000


class MemoryBank(BankJournal):
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
        self.index.upsert([item.id for item in items], vectors, [item.kind for item in items],
                          [item.backend for item in items], [item.task_id for item in items], q, visits,
                          feasible=[is_feasible_trace(item) for item in items], scopes=[item_scope(i) for i in items])
        for item in items:
            previous = self.items.get(item.id)
            self.items[item.id] = item if item.embedding is None else item.model_copy(update={"embedding": None})
            if item.parent_id and (previous is None or previous.parent_id != item.parent_id):
                self.children_of.setdefault(item.parent_id, []).append(item.id)
            if item.kind == "api":
                self.api.add(item.backend, item.id, item.name, "core" in item.tags)
            if is_feasible_trace(item) and previous is None:
                key = slot_kernel_key(item)
                if key is not None:
                    self.slot_kernels.setdefault(key, []).append(item.id)

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
        else:
            self.store.add_items(table)

    def index_items(self, items: list[MemoryItem], vectors: np.ndarray) -> list[str]:
        self._index_items(items, vectors)
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
        return ids

    # -- reading -----------------------------------------------------------------------------------
    def _public(self, item_id: str) -> MemoryItem:
        row = self.index.row_of[item_id]
        draft, refine = STAGE_ROW["draft"], STAGE_ROW["refine"]
        return self.items[item_id].model_copy(update={
            "q_draft": float(self.index.q[draft, row]), "q_refine": float(self.index.q[refine, row]),
            "visits_draft": int(self.index.visits[draft, row]), "visits_refine": int(self.index.visits[refine, row]),
        })

    def get(self, item_id: str, with_embedding: bool = False) -> MemoryItem | None:
        if item_id not in self.items:
            return None
        item = self._public(item_id)
        if with_embedding:
            item.embedding = self.index.vectors[self.index.row_of[item_id]].tolist()
        return item

    def children(self, item_id: str) -> list[MemoryItem]:
        return [self._public(child) for child in self.children_of.get(item_id, [])]

    def api_items(self, backend: str, names: list[str] | None = None, core: bool = True) -> list[MemoryItem]:
        """The backend's core bundle items (if `core`) and the API items named exactly in `names`."""
        ids = list(self.api.core.get(backend, [])[: self.config.api_bundle_size]) if core else []
        for item_id in self.api.lookup(backend, names or []):
            if item_id not in ids:
                ids.append(item_id)
        return [self._public(item_id) for item_id in ids]

    def ids(self) -> list[str]:
        return list(self.index.ids)

    # -- retrieval ---------------------------------------------------------------------------------
    def retrieve(self, request: RetrievalRequest, record: bool = True) -> Retrieval:
        """Two-phase retrieval for one attempt; its context is logged for the later update
        (unless `record` is false: inspection from the command line)."""
        return self.retrieve_many([request], record)[0]

    def retrieve_many(self, requests: list[RetrievalRequest], record: bool = True) -> list[Retrieval]:
        """Several retrievals with one pass over the embedding matrix."""
        missing = [r for r in requests if self.needs_query_vector(r) and r.query_embedding is None]
        if missing:
            vectors = self.embedder.embed([r.query for r in missing])
            filled = {id(r): v.tolist() for r, v in zip(missing, vectors, strict=True)}
            requests = [r.model_copy(update={"query_embedding": filled[id(r)]}) if id(r) in filled else r
                        for r in requests]
        queries = self.query_matrix(requests)
        sims = self.index.similarities(queries, len(self.index)) if len(queries) else queries
        return self.finish_retrievals(requests, sims, record)

    def needs_query_vector(self, request: RetrievalRequest) -> bool:
        n = self.config.items_per_prompt if request.n is None else request.n
        return self.config.retrieval != "none" and n > 0

    def query_matrix(self, requests: list[RetrievalRequest]) -> np.ndarray:
        """Unit query vectors of the requests that recall, one row each (all need query_embedding)."""
        rows = []
        for request in filter(self.needs_query_vector, requests):
            query = np.asarray(request.query_embedding, dtype=np.float32)
            if query.shape != (self.dim,):
                raise ValueError(f"query embedding of {query.shape[0]} floats, bank wants {self.dim}")
            rows.append(query / max(float(np.linalg.norm(query)), 1e-12))
        return np.stack(rows) if rows else np.zeros((0, self.dim), dtype=np.float32)

    def finish_retrievals(self, requests: list[RetrievalRequest], sims: np.ndarray,
                          record: bool = True) -> list[Retrieval]:
        """Phase 2 and the API items, given phase 1's similarities (one row per recalling request,
        over the first sims.shape[1] items)."""
        rows = iter(sims)
        return [self._finish(request, next(rows) if self.needs_query_vector(request) else None, record)
                for request in requests]

    def _finish(self, request: RetrievalRequest, sims: np.ndarray | None, record: bool) -> Retrieval:
        mode = self.config.retrieval
        retrieval = Retrieval(retrieval_id=new_id(), stage=request.stage, mode=mode)
        if mode == "none":
            # No memory, but the same static brief as the other arms: the backend's core API items.
            retrieval.api_items = self.api_items(request.backend) if request.include_api else []
            if request.slot is not None:
                retrieval.slot = self._slot(request, None)
            return retrieval
        if request.slot is not None:  # the draft's one decision: the slot, and whether ranked items come
            retrieval.slot = self._slot(request, sims)
            if retrieval.slot.kind != "generic":
                retrieval.slot_item = self._public(retrieval.slot.chosen)
        if sims is not None and (retrieval.slot is None or retrieval.slot.ranked):
            n = self.config.items_per_prompt if request.n is None else request.n
            scoped = None if request.family is None else scopes(request.family, request.shape, request.stage)
            keep = self.index.mask(request.backend, request.kinds, request.exclude_task_id, n=len(sims),
                                   feasible_traces_only=request.trace_verdicts == "feasible", scopes=scoped)
            k = recall_pool_size(n, len(self.index), self.config) if mode == "value" else n
            rows, pool_sims = self.index.top_k(sims, keep, k)
            rng = np.random.default_rng([self.config.seed, request.seed]) if request.seed is not None else self.rng
            positions, scores = select(pool_sims, self.index.value(request.stage, rows), n, mode, self.config.ranker,
                                       self.config, rng)
            retrieval.pool_size = len(rows)
            retrieval.items = [self._public(self.index.ids[rows[pos]]) for pos in positions]
            retrieval.scores = [float(scores[pos]) for pos in positions]
            retrieval.similarities = [float(pool_sims[pos]) for pos in positions]
        if request.include_api:
            names = list(request.api_names)
            names += self.api.names_in(request.backend, (item.content for item in retrieval.items))
            retrieval.api_items = self.api_items(
                request.backend, names[: len(request.api_names) + self.config.api_name_lookup_max])
        if record:
            self.seq += 1
            self._remember_retrieval(retrieval.retrieval_id, self.seq, request.stage, retrieval.item_ids)
            self.pending.append(self._log_row("retrieval", retrieval.retrieval_id, request.stage,
                                              item_ids=retrieval.item_ids))
        return retrieval

    def _slot(self, request: RetrievalRequest, sims: np.ndarray | None) -> SlotChoice:
        """The worked-example slot's candidates (slots.py) and the mode's choice among them."""
        slot: SlotRequest = request.slot  # type: ignore[assignment]
        candidates = [SlotCandidate(key=GENERIC, kind="generic")]
        if self.config.retrieval == "none":
            return decide("none", request.backend, slot, candidates, self.slots, self.config, self.rng)
        def similarity(item_id: str) -> float | None:
            row = self.index.row_of[item_id]
            return float(sims[row]) if sims is not None and row < len(sims) else None
        for kind, name in (("rung", slot.rung), ("example", slot.example)):  # the family's ladder, first rung first
            candidates += [SlotCandidate(key=item_id, kind=kind, similarity=similarity(item_id))  # type: ignore[arg-type]
                           for item_id in (self.api.lookup(request.backend, [name]) if name else [])]
        nearest: dict[str | None, SlotCandidate] = {}  # one kernel per operator: its nearest
        for item_id in self.slot_kernels.get((request.backend, slot.family, slot.shape), []):
            task = self.items[item_id].task_id
            if task == slot.task_id or (request.exclude_task_id and task == request.exclude_task_id):
                continue
            candidate = SlotCandidate(key=item_id, kind="kernel", similarity=similarity(item_id))
            if task not in nearest or (candidate.similarity or 0.0) > (nearest[task].similarity or 0.0):
                nearest[task] = candidate
        kernels = sorted(nearest.values(), key=lambda c: -(c.similarity or 0.0))[: self.config.slot_kernels]
        rng = np.random.default_rng([self.config.seed, request.seed, 1]) if request.seed is not None else self.rng
        choice = decide(self.config.retrieval, request.backend, slot, candidates + kernels, self.slots, self.config, rng)
        start = next((c for c in candidates if slot.start and c.kind == slot.start), None)
        if start is None:
            return choice
        # A draft that starts from a given option (the learning pass's first draft of an operator
        # starts from its family's first rung): shown alone, and its verdict counts for that option.
        return choice.model_copy(update={"chosen": start.key, "kind": start.kind, "ranked": False, "reason": "start",
                                         "option": option_key(start.kind, False)})

    def _remember_retrieval(self, retrieval_id: str, seq: int, stage: str, item_ids: list[str]) -> None:
        self.retrievals[retrieval_id] = (seq, stage, list(item_ids))
        while len(self.retrievals) > max(self.config.retrieval_log_keep, 1000):
            self.retrievals.popitem(last=False)

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
        attempt = self.items.get(update.attempt_id) if update.attempt_id else None
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
        if update.slot is not None and update.stage == "draft":
            # The slot's outcome: counts, absolute like q (replay is idempotent), in a row of its own.
            changed = self.slots.record(update.slot, update.reward > 0)
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
        kinds = Counter(item.kind for item in self.items.values())
        backends = Counter(item.backend for item in self.items.values())
        return BankStats(
            uri=self.config.uri, items=len(self.items), items_by_kind=dict(kinds), items_by_backend=dict(backends),
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
        return [self.get(item_id, with_embedding=True).model_dump(mode="json") for item_id in self.index.ids]

    def items_table(self) -> pa.Table:
        return self.store.read_items()
