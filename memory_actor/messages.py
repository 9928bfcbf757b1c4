"""Requests and replies of the memory's API (the same for MemoryBank and the Ray actor)."""

from __future__ import annotations

import uuid
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from memory_actor.items import ItemKind, MemoryItem, ValueStage
from memory_actor.slots import SlotChoice, SlotOutcome, SlotRequest

TraceVerdicts = Literal["any", "feasible"]


class RetrievalRequest(BaseModel):
    """Context wanted for one attempt at stage `stage` of a task on `backend`."""

    model_config = ConfigDict(extra="forbid")

    query: str = Field(..., description="text to recall by: the task, its signature, the start point's code")
    stage: ValueStage
    backend: str
    kinds: list[ItemKind] = Field(default_factory=lambda: ["experience", "trace", "practice"])
    n: int | None = Field(None, ge=0, description="items wanted; default: the config's items_per_prompt")
    exclude_task_id: str | None = Field(None, description="leave out this task's own items (held-out runs)")
    api_names: list[str] = Field(default_factory=list, description="API names to look up besides those in the code")
    include_api: bool = True
    seed: int | None = Field(None, description="per-request seed of the exploration (reproducible ablations)")
    query_embedding: list[float] | None = Field(None, description="skip embedding `query` (benchmarks, tests)")
    trace_verdicts: TraceVerdicts = Field(
        "feasible",
        description="feasible: trace items are recalled only if they passed all three gates (their verdict's gate "
        "is 'ok'), so exemplar code never comes from a failed kernel; failures come back only as experience "
        "items (lessons). any: every trace (inspection). A prefilter: the recall pool is filled with eligible items",
    )
    slot: SlotRequest | None = Field(None, description="drafts: the one decision beyond the static brief (slots.py): "
                                     "what fills the worked-example slot, and whether ranked items are recalled")
    family: str | None = Field(None, description="the task's family: ranked traces only of this family and `shape`, "
                               "lessons only of this family that teach (memory_actor/scope.py); None: unscoped")
    shape: str = Field("", description="the task's kernel signature shape (actors/signature_shape.py)")


class ItemRef(BaseModel):
    """A retrieved item in brief, for provenance records (attempts.jsonl): no content, no embedding."""

    model_config = ConfigDict(extra="forbid")

    id: str
    kind: ItemKind
    task_id: str | None = None
    q: float = Field(..., description="the item's Q for the retrieval's stage when it was retrieved")
    similarity: float | None = None
    score: float | None = Field(None, description="what the ranker ranked it by")


class Retrieval(BaseModel):
    """What a retrieval returned. `retrieval_id` names its context in the later ValueUpdate."""

    model_config = ConfigDict(extra="forbid")

    retrieval_id: str
    stage: ValueStage
    mode: Literal["value", "similarity", "none"]
    items: list[MemoryItem] = Field(default_factory=list, description="value-ranked items (embeddings left out)")
    scores: list[float] = Field(default_factory=list, description="the ranking score of each item")
    similarities: list[float] = Field(default_factory=list)
    api_items: list[MemoryItem] = Field(default_factory=list, description="bundle and exact-name API items")
    pool_size: int = 0
    slot: SlotChoice | None = Field(None, description="the worked-example slot's decision (when the request asked)")
    slot_item: MemoryItem | None = Field(None, description="the kernel or example the slot chose (None: generic)")
    elapsed_ms: float | None = Field(None, description="arrival at the memory to reply, queueing included")
    service_ms: float | None = Field(None, description="the pass (or batch of passes) that served it")

    @property
    def item_ids(self) -> list[str]:
        return [item.id for item in self.items]

    def refs(self, ids: list[str] | None = None, api: bool = False) -> list[ItemRef]:
        """The ranked items (and the API items with `api`) as ItemRefs, in order; only those in
        `ids` when given (e.g. the ids that survived the prompt budget)."""
        wanted = None if ids is None else set(ids)
        refs = []
        for pos, item in enumerate(self.items + (self.api_items if api else [])):
            if wanted is not None and item.id not in wanted:
                continue
            ranked = pos < len(self.items)
            q = item.q_draft if self.stage == "draft" else item.q_refine
            refs.append(ItemRef(id=item.id, kind=item.kind, task_id=item.task_id, q=q if q is not None else 0.0,
                                similarity=self.similarities[pos] if ranked and pos < len(self.similarities) else None,
                                score=self.scores[pos] if ranked and pos < len(self.scores) else None))
        return refs


class ValueUpdate(BaseModel):
    """A reward for what the model was shown in one attempt.

    Give `shown_ids`: exactly those items are credited (one visit and one value step each), and
    nothing else; ids the bank does not know are ignored (listed in the ack's `ignored_ids`).
    `retrieval_id` then only links the update to its retrieval in the log. Without `shown_ids`
    (legacy callers) the credited set is the retrieval's items plus `item_ids`, whether or not
    they reached the prompt, and unknown ids refuse the update.
    """

    model_config = ConfigDict(extra="forbid")

    update_id: str = Field(default_factory=lambda: uuid.uuid4().hex, description="deduplicates retried calls")
    retrieval_id: str | None = None
    shown_ids: list[str] | None = Field(
        None, description="ids of exactly the items in the prompt (after the prompt budget cut): the ranked items "
        "kept, the refine start point, the children shown (API items may be included). Credited exactly")
    item_ids: list[str] = Field(default_factory=list, description="legacy: added to the retrieval's items; "
                                "not with shown_ids")
    attempt_id: str | None = Field(None, description="the trace item of this attempt: provenance credit walks "
                                   "back from its parent (start point) when it is feasible")
    stage: ValueStage
    reward: float
    slot: SlotOutcome | None = Field(None, description="a draft: what its worked-example slot showed; the reward's "
                                     "sign counts a success or a failure for it")

    @model_validator(mode="after")
    def _one_way_to_name_the_context(self) -> ValueUpdate:
        if self.shown_ids is not None and self.item_ids:
            raise ValueError("give shown_ids (exactly what was shown) or the legacy item_ids, not both")
        return self


class UpdateAck(BaseModel):
    """An update's place in the bank's order, and whether it is durable."""

    model_config = ConfigDict(extra="forbid")

    update_id: str
    seq: int = Field(..., description="position in the bank's total order of log entries (-1: duplicate)")
    item_ids: list[str] = Field(..., description="the items credited as shown (one visit each)")
    reward_applied: float = Field(..., description="the reward after normalisation")
    advantage: float | None = Field(None, description="what Q moved towards: reward_applied minus the stage's "
                                    "baseline (equal to reward_applied with baseline off)")
    ignored_ids: list[str] = Field(default_factory=list, description="shown_ids the bank does not know")
    provenance_ids: list[str] = Field(default_factory=list, description="items credited by provenance (no visit)")
    durable: bool
    duplicate: bool = False
    error: str | None = Field(None, description="update_batch: why this update was refused (nothing applied)")


class BankStats(BaseModel):
    model_config = ConfigDict(extra="forbid")

    uri: str
    items: int
    items_by_kind: dict[str, int]
    items_by_backend: dict[str, int]
    embedding_dim: int
    embedder: str
    updates: int = Field(..., description="updates applied since the bank was created")
    last_seq: int
    pending_log_rows: int
    log_rows: int
    versions: dict[str, int] = Field(default_factory=dict, description="table versions kept on disk")
    bank_bytes: int | None = None
    refine_reward_mean: float
    refine_reward_std: float
    refine_rewards_seen: int
    baselines: dict[str, float] = Field(default_factory=dict, description="running mean reward per stage")
    slots: dict[str, list[int | float]] = Field(default_factory=dict, description="worked-example slot: [successes, drafts] "
                                        "per backend/family/context/candidate")


class UnknownRetrieval(KeyError):
    """An update named a retrieval this bank does not know (and gave no item ids)."""

