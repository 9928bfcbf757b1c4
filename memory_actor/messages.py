"""Requests and replies of the memory's API (the same for MemoryBank and the Ray actor)."""

from __future__ import annotations

import uuid
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from memory_actor.items import ItemKind, MemoryItem, ValueStage


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
    elapsed_ms: float | None = Field(None, description="arrival at the memory to reply, queueing included")
    service_ms: float | None = Field(None, description="the pass (or batch of passes) that served it")

    @property
    def item_ids(self) -> list[str]:
        return [item.id for item in self.items]


class ValueUpdate(BaseModel):
    """A reward for the context of one attempt: the retrieval's items plus `item_ids` (e.g. the start point)."""

    model_config = ConfigDict(extra="forbid")

    update_id: str = Field(default_factory=lambda: uuid.uuid4().hex, description="deduplicates retried calls")
    retrieval_id: str | None = None
    item_ids: list[str] = Field(default_factory=list)
    stage: ValueStage
    reward: float


class UpdateAck(BaseModel):
    """An update's place in the bank's order, and whether it is durable."""

    model_config = ConfigDict(extra="forbid")

    update_id: str
    seq: int = Field(..., description="position in the bank's total order of log entries (-1: duplicate)")
    item_ids: list[str]
    reward_applied: float = Field(..., description="the reward after normalisation")
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


class UnknownRetrieval(KeyError):
    """An update named a retrieval this bank does not know (and gave no item ids)."""

