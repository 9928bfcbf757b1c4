"""Settings of the value-driven memory."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class MemoryConfig(BaseModel):
    """Where the bank lives, how it embeds, and how retrieval ranks and updates values."""

    model_config = ConfigDict(extra="forbid")

    uri: str = Field(".evokernel/memory", description="LanceDB URI: a directory, or s3://... for clusters")
    retrieval: Literal["value", "similarity", "none"] = Field(
        "value", description="value: recall then Q-rank; similarity: recall only; none: no memory"
    )
    ranker: Literal["q", "mixed"] = Field("q", description="q: epsilon-greedy on Q; mixed: MemRL-style score")
    items_per_prompt: int = Field(5, ge=1, description="N items per retrieval")
    recall_lambda: float = Field(3.0, ge=1, description="recall pool K = lambda * N")
    alpha: float = Field(0.2, gt=0, le=1, description="learning rate of Q updates")
    epsilon: float = Field(0.1, ge=0, le=1, description="exploration rate of the Q ranking")
    q_init: float = Field(0.0, description="initial Q of a new item")
    w_sim: float = Field(0.5, description="mixed ranker: weight of z(similarity)")
    w_q: float = Field(0.5, description="mixed ranker: weight of clip(z(Q))")
    embedder: Literal["minilm", "openai"] = Field("minilm", description="offline MiniLM, or an embeddings endpoint")
    embed_base_url: str | None = Field(None, description="embeddings endpoint for embedder=openai")
    embed_model: str = Field("text-embedding-3-small")
    actor_name: str = Field("evokernel-memory", description="name of the shared Ray actor")
