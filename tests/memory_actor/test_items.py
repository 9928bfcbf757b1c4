"""MemoryItem <-> Arrow: the LanceDB schema round-trips every field."""

from datetime import UTC, datetime

import numpy as np
import pyarrow as pa
import pytest

from memory_actor.items import (
    ItemVerdict,
    MemoryItem,
    item_schema,
    items_from_arrow,
    items_to_arrow,
)

from .conftest import unit_vectors


def test_items_round_trip_through_arrow():
    vectors = unit_vectors(2)
    full = MemoryItem(
        kind="trace", backend="npu", task_id="23_Softmax", task_signature="softmax(x: f32[16,1024])",
        stage="refine", name=None, tags=["x"], content="__aicore__ void k() {}", summary="tiled softmax",
        embedding=vectors[0].tolist(), verdict=ItemVerdict(gate="ok", reason="passed", latency_ms=0.25, speedup=1.7),
        reward=0.4, parent_id="p1", q_draft=0.1, q_refine=-0.3, visits_draft=2, visits_refine=5,
        created_at=datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=UTC), updated_at=datetime(2026, 1, 3, tzinfo=UTC),
        run_id="run-1",
    )
    sparse = MemoryItem(kind="api", backend="cpu", name="expf", content="expf(x)", embedding=vectors[1].tolist())
    table = items_to_arrow([full, sparse], 384)
    assert table.schema == item_schema(384)
    assert table.schema.field("embedding").type == pa.list_(pa.float32(), 384)
    back = items_from_arrow(table)
    assert back[0].model_dump(exclude={"embedding"}) == full.model_dump(exclude={"embedding"})
    assert back[1].model_dump(exclude={"embedding"}) == sparse.model_dump(exclude={"embedding"})
    np.testing.assert_allclose(back[0].embedding, full.embedding, rtol=1e-6)


def test_items_without_embedding_are_refused():
    item = MemoryItem(kind="practice", backend="cpu", content="tile loops")
    with pytest.raises(ValueError, match="embedding of 384 floats"):
        items_to_arrow([item], 384)
