"""Retrieval from the bank: phase 1 (similarities over the embedding matrix, batched across
requests), phase 2 (the mode's selection from the recall pool), the draft's worked-example slot
decision (slots.py) and the API items. `BankRetrieval` is a mixin of `MemoryBank` (bank.py),
whose state it reads; a recorded retrieval is appended to the bank's log (journal.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from memory_actor.index import RecallFilter
from memory_actor.items import new_id
from memory_actor.messages import Retrieval, RetrievalRequest
from memory_actor.ranking import recall_pool_size, select
from memory_actor.recall.indexed import Recalled
from memory_actor.scope import scopes
from memory_actor.slots import (
    CROSS_BACKEND,
    GENERIC,
    REFINE_TAG,
    SlotCandidate,
    SlotChoice,
    SlotRequest,
    decide,
    example_option_of,
    is_refine,
    option_key,
)


@dataclass
class Planned:
    """A retrieval whose items are chosen (ids) but not yet read: `BankRetrieval.plan_retrievals`."""

    request: RetrievalRequest
    retrieval: Retrieval
    item_ids: list[str] = field(default_factory=list)
    slot_id: str | None = None


def planned_ids(plans: list[Planned]) -> list[str]:
    return [item_id for plan in plans for item_id in ([plan.slot_id] if plan.slot_id else []) + plan.item_ids]


class BankRetrieval:
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
        return self.finish_retrievals(requests, self.recall_requests(requests, queries), record)

    def recall_requests(self, requests: list[RetrievalRequest], queries: np.ndarray,
                        n: int | None = None) -> np.ndarray | list[Recalled]:
        """Phase 1 for the requests that recall (one query row each): the similarities with the
        first n items (default: all), one pass over the matrix; or, for a bank on LanceDB's
        index (memory_actor/recall/), each request's pool and the similarities its slot needs,
        their items read into memory. Reads only: may run in a thread while items are added."""
        if self.recall is None:
            return self.index.similarities(queries, len(self.index) if n is None else n) if len(queries) else queries
        recalling = list(filter(self.needs_query_vector, requests))
        wheres, ks = zip(*(self._recall_filter(request) for request in recalling), strict=True) if recalling else ((), ())
        recalled = self.recall.recall_many(queries, list(wheres), list(ks))
        for request, query, found in zip(recalling, queries, recalled, strict=True):
            if request.slot is not None:
                self.recall.slot_similarities(query, request.backend, request.slot, self.task_kernels, found)
        self.items.prefetch(item_id for r in recalled for item_id in r.read)  # what the slot decision reads
        return recalled

    def _recall_filter(self, request: RetrievalRequest) -> tuple[RecallFilter, int]:
        """An indexed recall's filter (what `_pool` masks with) and its K."""
        n = self.config.items_per_prompt if request.n is None else request.n
        k = recall_pool_size(n, len(self.index), self.config) if self.config.retrieval == "value" else n
        scoped = None if request.family is None else tuple(scopes(request.family, request.shape, request.stage))
        return RecallFilter(request.backend, tuple(request.kinds), request.exclude_task_id,
                            request.trace_verdicts == "feasible", scoped), k

    def recall_pool(self, request: RetrievalRequest) -> list[tuple[str, float]]:
        """Phase 1 alone: the recall pool of REQUEST (ids and similarities, most similar first),
        as a `value` retrieval would rank it (bench.memory's recall@K)."""
        request = request if request.query_embedding is not None else request.model_copy(
            update={"query_embedding": self.embedder.embed([request.query])[0].tolist()})
        sims = self.recall_requests([request], self.query_matrix([request]))
        rows, pool_sims = self._pool(request, sims[0], self.config.items_per_prompt if request.n is None else request.n)
        return [(self.index.ids[row], float(sim)) for row, sim in zip(rows.tolist(), pool_sims.tolist(), strict=True)]

    def _pool(self, request: RetrievalRequest, sims: np.ndarray | Recalled, n: int) -> tuple[np.ndarray, np.ndarray]:
        if isinstance(sims, Recalled):  # filtered and cut to K in the recall itself
            return sims.rows, sims.sims
        scoped = None if request.family is None else scopes(request.family, request.shape, request.stage)
        keep = self.index.mask(request.backend, request.kinds, request.exclude_task_id, n=len(sims),
                               feasible_traces_only=request.trace_verdicts == "feasible", scopes=scoped)
        k = recall_pool_size(n, len(self.index), self.config) if self.config.retrieval == "value" else n
        return self.index.top_k(sims, keep, k)

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

    def finish_retrievals(self, requests: list[RetrievalRequest], sims: np.ndarray | list[Recalled],
                          record: bool = True) -> list[Retrieval]:
        """Phase 2 and the API items, given phase 1's similarities (one row per recalling request,
        over the first sims.shape[1] items). The actor splits it: `plan_retrievals` (which items),
        the items read from disk in a thread (a bank on LanceDB's index), `fill_retrievals`."""
        plans = self.plan_retrievals(requests, sims)
        if self.recall is not None:
            self.items.prefetch(planned_ids(plans))
        return self.fill_retrievals(plans, record)

    def plan_retrievals(self, requests: list[RetrievalRequest], sims: np.ndarray | list[Recalled]) -> list[Planned]:
        rows = iter(sims)
        return [self._plan(request, next(rows) if self.needs_query_vector(request) else None) for request in requests]

    def fill_retrievals(self, plans: list[Planned], record: bool = True) -> list[Retrieval]:
        return [self._fill(plan, record) for plan in plans]

    def _plan(self, request: RetrievalRequest, sims: np.ndarray | Recalled | None) -> Planned:
        """The slot decision and phase 2: which items the retrieval shows (their ids)."""
        mode = self.config.retrieval
        plan = Planned(request, Retrieval(retrieval_id=new_id(), stage=request.stage, mode=mode))
        retrieval = plan.retrieval
        if mode == "none":
            if request.slot is not None:
                retrieval.slot = self._slot(request, None)
            return plan
        if request.slot is not None:  # the draft's one decision: the slot, and whether ranked items come
            retrieval.slot = self._slot(request, sims)
            if retrieval.slot.kind != "generic":
                plan.slot_id = retrieval.slot.chosen
        if sims is not None and (retrieval.slot is None or retrieval.slot.ranked or is_refine(retrieval.slot.context)):
            n = self.config.items_per_prompt if request.n is None else request.n
            rows, pool_sims = self._pool(request, sims, n)
            rng = np.random.default_rng([self.config.seed, request.seed]) if request.seed is not None else self.rng
            positions, scores = select(pool_sims, self.index.value(request.stage, rows), n, mode, self.config.ranker,
                                       self.config, rng)
            retrieval.pool_size = len(rows)
            plan.item_ids = [self.index.ids[rows[pos]] for pos in positions]
            retrieval.scores = [float(scores[pos]) for pos in positions]
            retrieval.similarities = [float(pool_sims[pos]) for pos in positions]
        return plan

    def _fill(self, plan: Planned, record: bool) -> Retrieval:
        """The chosen items with their current values, the API items, and the retrieval logged."""
        request, retrieval = plan.request, plan.retrieval
        if retrieval.mode == "none":
            # No memory, but the same static brief as the other arms: the backend's core API items.
            retrieval.api_items = self.api_items(request.backend) if request.include_api else []
            return retrieval
        if plan.slot_id is not None:
            retrieval.slot_item = self._public(plan.slot_id)
        retrieval.items = [self._public(item_id) for item_id in plan.item_ids]
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

    def _slot(self, request: RetrievalRequest, sims: np.ndarray | Recalled | None) -> SlotChoice:
        """The worked-example slot's candidates (slots.py) and the mode's choice among them."""
        slot: SlotRequest = request.slot  # type: ignore[assignment]
        if self.config.retrieval == "none":
            return decide("none", request.backend, slot, [SlotCandidate(key=GENERIC, kind="generic")], self.slots,
                          self.config, self.rng)

        def similarity(item_id: str) -> float | None:
            row = self.index.row_of[item_id]
            if isinstance(sims, Recalled):
                return sims.similarity(row)
            return float(sims[row]) if sims is not None and row < len(sims) else None
        nearest = sims.kernel_ids if isinstance(sims, Recalled) else None  # a large bank: the nearest kernels
        candidates, kernels = self.slot_candidates(request.backend, slot, similarity, request.exclude_task_id, nearest)
        rng = np.random.default_rng([self.config.seed, request.seed, 1]) if request.seed is not None else self.rng
        choice = decide(self.config.retrieval, request.backend, slot, candidates + kernels, self.slots, self.config, rng)
        preferred = [option.strip() for option in (slot.start or "").split(",") if option.strip()]
        start = next((c for option in preferred for c in candidates if c.option == option), None)
        if start is None:
            return choice
        # A draft that starts from a given option (the learning pass's first draft of an operator
        # starts from its family's first rung): shown alone, and its verdict counts for that option.
        return choice.model_copy(update={"chosen": start.key, "kind": start.kind, "ranked": False, "reason": "start",
                                         "option": option_key(start.option, False)})

    def slot_candidates(self, backend: str, slot: SlotRequest,
                        similarity: Callable[[str], float | None] = lambda item_id: None,
                        exclude_task_id: str | None = None,
                        kernel_ids: list[str] | None = None) -> tuple[list[SlotCandidate], list[SlotCandidate]]:
        """What may fill a draft's slot (bench.decision_replay lists them the same way): the generic
        example and the family's examples the brief offers, then at most `slot_kernels` banked
        kernels of the family and signature shape (one per operator, the nearest, never the
        task's own); `similarity(item_id)` orders the kernels (None: unordered). `kernel_ids`:
        the kernels to consider (a bank on the index: the nearest it recalled), else all."""
        candidates = [SlotCandidate(key=GENERIC, kind="generic")]
        # The family's examples the brief offers (SlotRequest.example, .rung: those a prompt of this
        # task may show), each an option by its `option:` tag (bundle field `option`, default
        # `example`; the first rung's entries say `option: rung`): the options come from data, not
        # from code here; sorted by name, so the order (ties between untried options) does not
        # depend on how the bank was loaded.
        offered = slot.offered()
        examples = {item_id for item_id in self.slot_examples.get((backend, slot.family), set())
                    if self.items[item_id].name in offered} | set(self.api.lookup(backend, offered))
        for item_id in sorted(examples, key=lambda i: (self.items[i].name or "", i)):
            if (REFINE_TAG in self.items[item_id].tags) != is_refine(slot.context):
                continue  # a speed rung is the refine decision's option, a draft's example never (issue 65)
            option = example_option_of(self.items[item_id]) or "example"
            candidates.append(SlotCandidate(key=item_id, kind="example", option=option, similarity=similarity(item_id)))
        if is_refine(slot.context):  # a refinement's options: its start point's next rung up, or nothing
            return candidates, []
        if slot.cross_backend:  # the operator's own verified kernel in a language the model knows (issue 64)
            own = [i for i in self.task_kernels.get((slot.cross_backend, slot.task_id), []) if i in self.items]
            if own:
                fastest = min(own, key=lambda i: (self.items[i].verdict.latency_ms or float("inf"))
                              if self.items[i].verdict is not None else float("inf"))
                candidates.append(SlotCandidate(key=fastest, kind="kernel", option=CROSS_BACKEND,
                                                similarity=similarity(fastest)))
        nearest: dict[str | None, SlotCandidate] = {}  # one kernel per operator: its nearest
        if kernel_ids is None:
            kernel_ids = self.slot_kernels.get((backend, slot.family, slot.shape), [])
        for item_id in kernel_ids:
            task = self.index.task_id(self.index.row_of[item_id])
            if task == slot.task_id or (exclude_task_id and task == exclude_task_id):
                continue
            candidate = SlotCandidate(key=item_id, kind="kernel", similarity=similarity(item_id))
            if task not in nearest or (candidate.similarity or 0.0) > (nearest[task].similarity or 0.0):
                nearest[task] = candidate
        kernels = sorted(nearest.values(), key=lambda c: -(c.similarity or 0.0))[: self.config.slot_kernels]
        return candidates, kernels

    def _remember_retrieval(self, retrieval_id: str, seq: int, stage: str, item_ids: list[str]) -> None:
        self.retrievals[retrieval_id] = (seq, stage, list(item_ids))
        while len(self.retrievals) > max(self.config.retrieval_log_keep, 1000):
            self.retrievals.popitem(last=False)
