"""What is written stays written: reopening rebuilds values and contexts from LanceDB, folds
shorten the log without changing values, and compaction bounds the table versions."""

import pytest

from memory_actor.bank import MemoryBank
from memory_actor.items import ItemVerdict, MemoryItem
from memory_actor.messages import RetrievalRequest, ValueUpdate

from .conftest import unit_vectors


def _items(count):
    return [MemoryItem(kind="trace", backend="cpu", content=f"kernel {i}", embedding=v.tolist(),
                       parent_id=None if i == 0 else "root", verdict=ItemVerdict(gate="ok"))
            for i, v in enumerate(unit_vectors(count))]


def _values(bank, ids):
    return {i: (bank.get(i).q_draft, bank.get(i).q_refine, bank.get(i).visits_draft, bank.get(i).visits_refine)
            for i in ids}


def test_reopened_bank_has_values_children_and_retrieval_contexts(memory_config):
    config = memory_config()
    bank = MemoryBank(config)
    root = bank.add([MemoryItem(id="root", kind="trace", backend="cpu", content="root", embedding=unit_vectors(1, 5)[0].tolist())])
    ids = bank.add(_items(6))
    retrieval = bank.retrieve(RetrievalRequest(query="", stage="refine", backend="cpu", kinds=["trace"], n=3,
                                               query_embedding=unit_vectors(1, 9)[0].tolist()))
    bank.update(ValueUpdate(retrieval_id=retrieval.retrieval_id, stage="refine", reward=-1.0))
    bank.flush()  # the retrieval context itself is durable too
    before = _values(bank, ids + root)

    reopened = MemoryBank(config)
    assert _values(reopened, ids + root) == before
    assert sorted(child.id for child in reopened.children("root")) == sorted(ids[1:])
    reopened.update(ValueUpdate(retrieval_id=retrieval.retrieval_id, stage="refine", reward=1.0))
    assert all(reopened.get(i).visits_refine == 2 for i in retrieval.item_ids)


def test_folding_shortens_the_log_and_keeps_every_value(memory_config):
    config = memory_config(fold_every_rows=10, version_retention_s=0)
    bank = MemoryBank(config)
    ids = bank.add(_items(20))
    for step in range(45):
        bank.update(ValueUpdate(item_ids=[ids[step % 20], ids[(step * 7) % 20]], stage="draft",
                                reward=(step % 5) / 2 - 1))
    assert bank.log_rows < 10  # folded every 10 rows
    expected = _values(bank, ids)
    reopened = MemoryBank(config)
    assert _values(reopened, ids) == expected
    stored = {row["id"]: row for row in reopened.items_table().to_pylist()}
    folded = [i for i in ids if stored[i]["visits_draft"] > 0]
    assert folded, "the items table holds folded values"
    assert reopened.updates_applied == 45


def test_compaction_bounds_table_versions(memory_config):
    config = memory_config(fold_every_flushes=20, version_retention_s=0)
    bank = MemoryBank(config)
    ids = bank.add(_items(5))
    for step in range(200):  # one durable write (one table version) per update
        bank.update(ValueUpdate(item_ids=[ids[step % 5]], stage="draft", reward=1.0))
    versions = bank.stats().versions
    assert max(versions.values()) <= 25, versions
    assert sum(MemoryBank(config).get(i).visits_draft for i in ids) == 200


def test_bank_refuses_another_embedder(memory_config):
    MemoryBank(memory_config()).add(_items(1))
    with pytest.raises(ValueError, match="holds minilm embeddings"):
        MemoryBank(memory_config(embedder="openai", embed_base_url="http://127.0.0.1:9/v1"))


def test_a_crash_between_folding_and_trimming_the_log_changes_nothing(memory_config):
    config = memory_config()
    bank = MemoryBank(config)
    ids = bank.add(_items(6))
    for step in range(30):
        bank.update(ValueUpdate(item_ids=[ids[step % 6]], stage="refine" if step % 2 else "draft",
                                reward=(step % 4) / 2 - 0.7))
    expected, normaliser = _values(bank, ids), bank.normaliser.model_dump()
    job = bank.begin_flush(fold=True)  # the fold's steps, stopped before trim_log (the crash)
    bank.write_log(job)
    bank.end_flush(job)
    bank.write_fold(job.fold)

    reopened = MemoryBank(config)
    assert reopened.log_rows == 30  # nothing was trimmed
    assert _values(reopened, ids) == expected
    assert reopened.normaliser.model_dump() == normaliser
    assert reopened.updates_applied == 30
    reopened.compact()
    assert reopened.log_rows == 0 and _values(MemoryBank(config), ids) == expected


def test_a_snapshot_opens_as_the_bank_was_and_later_updates_do_not_reach_it(memory_config, tmp_path):
    config = memory_config()
    bank = MemoryBank(config)
    ids = bank.add(_items(4))
    bank.stage_update(ValueUpdate(item_ids=ids[:2], stage="draft", reward=1.0))  # queued, not yet durable
    before = _values(bank, ids)
    bank.snapshot(str(tmp_path / "copy"))
    bank.update(ValueUpdate(item_ids=ids, stage="refine", reward=-1.0))  # after the copy

    copy = MemoryBank(config.model_copy(update={"uri": str(tmp_path / "copy")}))
    assert _values(copy, ids) == before and copy.updates_applied == 1
    assert _values(MemoryBank(config), ids) != before  # the original moved on
