"""The memory item: a pydantic model and the Arrow schema LanceDB stores it with."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any, Literal

import numpy as np
import pyarrow as pa
from pydantic import BaseModel, ConfigDict, Field

ItemKind = Literal["api", "experience", "trace", "practice"]
ItemStage = Literal["draft", "refine", "seed"]
ValueStage = Literal["draft", "refine"]
ITEM_KINDS: tuple[str, ...] = ("api", "experience", "trace", "practice")
VALUE_STAGES: tuple[str, ...] = ("draft", "refine")


def new_id() -> str:
    return uuid.uuid4().hex


def utc_now() -> datetime:
    return datetime.now(UTC)


class ItemVerdict(BaseModel):
    """What the harness said about a trace: the gate it stopped at, why, and how fast it ran."""

    model_config = ConfigDict(extra="forbid")

    gate: str = ""
    reason: str = ""
    latency_ms: float | None = None
    speedup: float | None = None


class MemoryItem(BaseModel):
    """One unit of memory. Q values and visits are per stage; traces form a tree by parent_id."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(default_factory=new_id)
    kind: ItemKind
    backend: str
    task_id: str | None = None
    task_signature: str = Field("", description="text describing the operator (shapes, signature)")
    stage: ItemStage = "seed"
    name: str | None = Field(None, description="API name, for exact-name lookup of api items")
    tags: list[str] = Field(default_factory=list, description="e.g. 'core' for the bundle's always-included items, "
                            "'family:elementwise' (key:value tags: tag_values)")
    content: str
    summary: str = ""
    embedding: list[float] | None = Field(None, description="unit vector; computed by the bank when absent")
    verdict: ItemVerdict | None = None
    reward: float | None = None
    parent_id: str | None = None
    q_draft: float | None = Field(None, description="None: the bank's q_init")
    q_refine: float | None = None
    visits_draft: int = 0
    visits_refine: int = 0
    created_at: datetime = Field(default_factory=utc_now)
    updated_at: datetime = Field(default_factory=utc_now)
    run_id: str | None = None
    context_ids: list[str] = Field(
        default_factory=list, description="trace: ids of the items in the prompt when it was created (provenance)")

    def tag_values(self) -> dict[str, str]:
        """The key:value tags ('family:...', 'shape:...', 'lesson:...') as a mapping."""
        return dict(tag.split(":", 1) for tag in self.tags if ":" in tag)

    def embedding_text(self) -> str:
        """The text the bank embeds: what the item is about first, then its body."""
        head = " ".join(part for part in (self.name or "", self.summary, self.task_signature) if part)
        return f"{head}\n{self.content}" if head else self.content


_VERDICT_TYPE = pa.struct(
    [("gate", pa.string()), ("reason", pa.string()), ("latency_ms", pa.float64()), ("speedup", pa.float64())]
)
_TIMESTAMP = pa.timestamp("us", tz="UTC")


def item_schema(dim: int) -> pa.Schema:
    """The items table's schema for embeddings of `dim` floats."""
    return pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),
            pa.field("kind", pa.string(), nullable=False),
            pa.field("backend", pa.string(), nullable=False),
            pa.field("task_id", pa.string()),
            pa.field("task_signature", pa.string()),
            pa.field("stage", pa.string()),
            pa.field("name", pa.string()),
            pa.field("tags", pa.list_(pa.string())),
            pa.field("content", pa.string()),
            pa.field("summary", pa.string()),
            pa.field("embedding", pa.list_(pa.float32(), dim)),
            pa.field("verdict", _VERDICT_TYPE),
            pa.field("reward", pa.float64()),
            pa.field("parent_id", pa.string()),
            pa.field("q_draft", pa.float64()),
            pa.field("q_refine", pa.float64()),
            pa.field("visits_draft", pa.int64()),
            pa.field("visits_refine", pa.int64()),
            pa.field("created_at", _TIMESTAMP),
            pa.field("updated_at", _TIMESTAMP),
            pa.field("run_id", pa.string()),
            pa.field("context_ids", pa.list_(pa.string())),  # new columns go last: older banks get them appended
        ]
    )


def items_to_arrow(items: list[MemoryItem], dim: int, vectors: np.ndarray | None = None,
                   overrides: dict[str, Any] | None = None) -> pa.Table:
    """Items as an Arrow table of `item_schema(dim)`, built column by column (fast for big batches).

    `vectors` (len(items), dim) replaces the items' own embeddings; `overrides` maps column names
    to replacement values (e.g. current Q values).
    """
    schema = item_schema(dim)
    if vectors is None:
        bad = [item.id for item in items if item.embedding is None or len(item.embedding) != dim]
        if bad:
            raise ValueError(f"items {bad[:3]} need an embedding of {dim} floats before they are stored")
        vectors = np.asarray([item.embedding for item in items], dtype=np.float32).reshape(len(items), dim)
    columns: dict[str, Any] = {
        name: [getattr(item, name) for item in items] for name in schema.names if name not in ("embedding", "verdict")
    }
    columns["verdict"] = [item.verdict.model_dump() if item.verdict else None for item in items]
    columns.update(overrides or {})
    flat = pa.array(np.ascontiguousarray(vectors, dtype=np.float32).ravel(), type=pa.float32())
    columns["embedding"] = pa.FixedSizeListArray.from_arrays(flat, dim)
    return pa.Table.from_pydict({name: columns[name] for name in schema.names}, schema=schema)


def items_from_arrow(table: pa.Table, with_embedding: bool = True, trusted: bool = False) -> list[MemoryItem]:
    """The inverse of `items_to_arrow`. `trusted` skips validation for rows this bank wrote itself
    (the Arrow schema already fixed every type): several times faster on large banks."""
    if not with_embedding and "embedding" in table.column_names:
        table = table.drop_columns(["embedding"])
    items = []
    for row in table.to_pylist():
        row["tags"] = row.get("tags") or []
        row["context_ids"] = row.get("context_ids") or []
        if trusted:
            verdict = row.pop("verdict", None)
            row.setdefault("embedding", None)
            item = MemoryItem.model_construct(**row)
            item.verdict = ItemVerdict.model_construct(**verdict) if verdict else None
            items.append(item)
        else:
            items.append(MemoryItem.model_validate(row))
    return items
