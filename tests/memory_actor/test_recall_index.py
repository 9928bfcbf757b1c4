"""Recall through LanceDB's vector index above `memory.recall_index_min_items` (issue 68,
memory_actor/recall/), on real banks in tmp_path: the same pools as exact search, items added
since the index searched exactly and refreshed into it, reopening, values folded alone, re-added
items, checksums, `memory stats`; below the threshold, today's exact recall."""

from __future__ import annotations

import json
import time
from pathlib import Path

import lancedb
import numpy as np
import pytest

from launch.cli import main
from memory_actor.bank import MemoryBank
from memory_actor.config import MemoryConfig
from memory_actor.disk.bank_errors import BankDamaged
from memory_actor.index import RecallFilter
from memory_actor.items import ItemVerdict, MemoryItem, items_to_arrow
from memory_actor.messages import RetrievalRequest, ValueUpdate
from memory_actor.ranking import recall_pool_size
from memory_actor.recall.columns import item_filters
from memory_actor.recall.items import LazyItems
from memory_actor.recall.table import RECALL, where_sql
from memory_actor.scope import item_scope
from memory_actor.values import is_feasible_trace

from .conftest import unit_vectors

SMALL = {"recall_index_min_items": 1000, "recall_refresh_rows": 200}
# Every partition probed and a deep re-rank: on a bank this small the index must give exact search's pool.
EXHAUSTIVE = {**SMALL, "recall_nprobes": 64, "recall_max_nprobes": 64, "recall_refine_factor": 20}


def _items(count: int, start: int = 0, seed: int = 0) -> list[MemoryItem]:
    """Traces (every other one feasible, of two families and shapes), lessons and practices, 10% on npu."""
    vectors = unit_vectors(count, seed)
    kinds = ["trace", "experience", "practice"]
    items = []
    for n, vector in enumerate(vectors):
        i = start + n
        kind = kinds[i % 3]
        tags = {"trace": [f"family:{'matmul' if i % 2 else 'elementwise'}", f"shape:s{i % 4}"],
                "experience": ["lesson:fix", "family:elementwise"] if i % 2 else ["lesson:failure"],
                "practice": []}[kind]
        items.append(MemoryItem(id=f"item{i}", kind=kind, backend="npu" if i % 10 == 0 else "cpu", task_id=f"t{i % 40}",
                                stage="draft", content=f"content {i}", tags=tags, embedding=vector.tolist(),
                                verdict=ItemVerdict(gate="ok" if i % 2 else "compile") if kind == "trace" else None))
    return items


def _bank(memory_config, count: int, **config) -> MemoryBank:
    """A bank of COUNT items written below the threshold, reopened with CONFIG."""
    first = MemoryBank(memory_config(recall_index_min_items=10**9))
    first.add(_items(count))
    first.close()
    return MemoryBank(memory_config(**config))


def _requests(query: np.ndarray) -> list[RetrievalRequest]:
    base = {"query": "", "stage": "draft", "backend": "cpu", "query_embedding": query.tolist(), "include_api": False}
    return [RetrievalRequest(**base),
            RetrievalRequest(**{**base, "backend": "npu"}),  # a tenth of the bank: LanceDB's prefilter
            RetrievalRequest(**{**base, "exclude_task_id": "t3", "n": 7}),
            RetrievalRequest(**{**base, "family": "elementwise", "shape": "s1"}),  # scoped
            RetrievalRequest(**{**base, "trace_verdicts": "any", "kinds": ["trace"]})]


def test_item_filters_say_what_the_scope_and_verdict_rules_say():
    items = _items(60) + [MemoryItem(kind="trace", backend="cpu", content="x", tags=["family:a", "family:b"]),
                          MemoryItem(kind="api", backend="cpu", content="x", tags=["core"])]
    codes, feasible, scope = item_filters(items_to_arrow(items, 384, np.zeros((len(items), 384), np.float32)))
    assert feasible.tolist() == [is_feasible_trace(item) for item in items]
    assert scope.to_pylist() == [item_scope(item) for item in items]


def test_a_bank_below_the_threshold_recalls_exactly_as_before(memory_config):
    bank = _bank(memory_config, 600, **SMALL)
    assert bank.recall is None and bank.index.keep_vectors
    assert RECALL not in lancedb.connect(bank.config.uri).list_tables().tables
    query = unit_vectors(1, seed=9)[0]
    request = _requests(query)[0]
    sims = bank.index.vectors[: len(bank.index)] @ query  # the in-memory matrix-vector product, bit for bit
    keep = bank.index.mask("cpu", request.kinds, feasible_traces_only=True)
    k = recall_pool_size(bank.config.items_per_prompt, len(bank.index), bank.config)
    order = np.argsort(-np.where(keep, sims, -np.inf), kind="stable")[:k]
    assert bank.recall_pool(request) == [(bank.index.ids[row], float(sims[row])) for row in order]


def test_the_index_fills_the_pool_as_exact_search_does(memory_config):
    bank = _bank(memory_config, 1500, **EXHAUSTIVE)
    assert bank.recall is not None and not bank.index.keep_vectors and isinstance(bank.items, LazyItems)
    exact = MemoryBank(memory_config(recall_index_min_items=10**9), read_only=True)
    for seed in range(4):
        for request in _requests(unit_vectors(1, seed=100 + seed)[0]):
            indexed, expected = bank.recall_pool(request), exact.recall_pool(request)
            assert [i for i, _ in indexed] == [i for i, _ in expected], request
            assert [s for _, s in indexed] == pytest.approx([s for _, s in expected], abs=1e-5)
    retrieval = bank.retrieve(_requests(unit_vectors(1, seed=5)[0])[0])
    assert retrieval.pool_size == recall_pool_size(5, 1500, bank.config) and len(retrieval.items) == 5
    assert all(item.content.startswith("content ") for item in retrieval.items)


def test_the_filter_in_sql_keeps_what_the_mask_keeps(memory_config):
    bank = _bank(memory_config, 1200, **SMALL)
    table = bank.recall.table.table
    for where in (RecallFilter("cpu", ("experience", "trace", "practice"), None, True, None),
                  RecallFilter("npu", ("trace",), "t10", False, None),
                  RecallFilter("cpu", ("trace", "experience"), "t3", True, ("trace/matmul/s1", "lesson/elementwise/draft")),
                  RecallFilter("cpu", ("practice",), None, True, ())):
        kept = set(table.search().where(where_sql(where)).select(["id"]).limit(None).to_arrow()["id"].to_pylist())
        rows = np.flatnonzero(bank.index.keep_rows(np.arange(len(bank.index)), where))
        assert kept == {bank.index.ids[row] for row in rows}, where


def test_items_added_since_the_index_are_found_then_refreshed_into_it(memory_config):
    bank = _bank(memory_config, 1200, **SMALL)
    late = _items(150, start=5000, seed=7)
    bank.add(late)
    assert len(bank.recall.fresh_rows) == 150 and bank.recall.table.state()["rows"] == 1200
    target = next(item for item in late if item.kind == "experience" and item.backend == "cpu")
    request = RetrievalRequest(query="", stage="draft", backend="cpu", query_embedding=target.embedding,
                               include_api=False)
    assert bank.recall_pool(request)[0] == (target.id, pytest.approx(1.0, abs=1e-5))
    bank.add(_items(60, start=6000, seed=8))  # 210 fresh >= recall_refresh_rows: refreshed on this add
    state = bank.recall_state()
    assert state["fresh_items"] == 0 and state["rows"] == 1410 and state["indexed_rows"] == 1410
    assert state["refreshed_at"] >= state["built_at"] and state["rows_added"] == 210
    assert bank.recall_pool(request)[0][0] == target.id
    bank.close()
    again = MemoryBank(memory_config(**SMALL))
    assert again.recall_state()["refreshed_at"] == state["refreshed_at"]
    assert again.recall_pool(request)[0][0] == target.id and len(again.items) == 1410


def test_reopening_catches_up_what_the_index_lacks(memory_config):
    bank = _bank(memory_config, 1200, **SMALL)
    few = _items(50, start=5000, seed=7)
    bank.add(few)
    bank.close()  # closed before a refresh: the 50 are in the items table only
    again = MemoryBank(memory_config(**SMALL))
    assert len(again.recall.fresh_rows) == 50 and again.recall.table.state()["rows"] == 1200
    target = next(item for item in few if item.kind == "experience" and item.backend == "cpu")
    request = RetrievalRequest(query="", stage="draft", backend="cpu", query_embedding=target.embedding,
                               include_api=False)
    assert again.recall_pool(request)[0][0] == target.id
    again.add(_items(300, start=6000, seed=8))
    again.close()
    later = MemoryBank(memory_config(**{**SMALL, "recall_refresh_rows": 100}))  # 350 missing > 100: written at open
    assert len(later.recall.fresh_rows) == 0 and later.recall.table.state()["rows"] == 1550
    assert later.recall_pool(request)[0][0] == target.id


def test_an_indexed_bank_keeps_values_and_codes_in_memory_and_texts_on_disk(memory_config):
    bank = _bank(memory_config, 1200, **SMALL)
    assert bank.index.vectors.size == 0 and not bank.items.cache
    item = bank.get("item7", with_embedding=True)
    assert item.content == "content 7" and item.embedding == pytest.approx(unit_vectors(1200)[7].tolist(), abs=1e-6)
    assert [child.id for child in bank.children("item7")] == []
    bank.items.cache_items = 100
    for i in range(0, 1200, 3):
        assert bank.items[f"item{i}"].content == f"content {i}"
    assert len(bank.items.cache) == 100
    assert "item5" in bank.items and "nothing" not in bank.items and len(bank.items) == 1200
    assert bank.stats().items_by_kind == {"trace": 400, "experience": 400, "practice": 400}


def test_values_fold_alone_and_reopen_on_an_indexed_bank(memory_config):
    bank = _bank(memory_config, 1200, **SMALL)
    for k in range(30):
        bank.update(ValueUpdate(shown_ids=[f"item{k}", f"item{k + 1}"], stage="draft" if k % 2 else "refine",
                                reward=1.0 if k % 3 else -1.0))
    values = {f"item{k}": (bank.get(f"item{k}").q_draft, bank.get(f"item{k}").q_refine) for k in range(31)}
    bank.compact()  # a fold: the values merged by id, texts and embeddings left as they are
    row = bank.store.items.search().where("id = 'item3'").limit(1).to_arrow().to_pylist()[0]
    assert row["content"] == "content 3" and row["embedding"] == pytest.approx(unit_vectors(1200)[3].tolist(), abs=1e-6)
    assert (row["q_draft"], row["q_refine"]) == values["item3"]
    bank.close()
    again = MemoryBank(memory_config(**SMALL))
    assert {key: (again.get(key).q_draft, again.get(key).q_refine) for key in values} == values


def test_a_readded_item_is_recalled_by_its_new_text_after_reopening(memory_config):
    bank = _bank(memory_config, 1200, **SMALL)
    moved = unit_vectors(1, seed=77)[0]
    old = bank.get("item4", with_embedding=True)
    bank.add([old.model_copy(update={"embedding": moved.tolist(), "content": "rewritten"})])
    request = RetrievalRequest(query="", stage="draft", backend="cpu", query_embedding=moved.tolist(), include_api=False)
    assert bank.recall_pool(request)[0] == ("item4", pytest.approx(1.0, abs=1e-5))
    bank.close()
    again = MemoryBank(memory_config(**SMALL))
    assert again.recall_pool(request)[0][0] == "item4" and again.get("item4").content == "rewritten"


def test_a_changed_byte_in_the_recall_table_is_refused(memory_config):
    bank = _bank(memory_config, 1200, **SMALL)
    bank.close()
    data = sorted(Path(bank.config.uri, "recall.lance", "data").glob("*.lance"))[0]
    raw = bytearray(data.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    data.write_bytes(bytes(raw))
    with pytest.raises(BankDamaged, match="recall.lance"):
        MemoryBank(memory_config(**SMALL))


def test_memory_stats_says_whether_the_bank_is_indexed(memory_config, capsys):
    bank = _bank(memory_config, 1200, **SMALL)
    bank.close()
    uri = bank.config.uri
    assert main(["--set", "memory.recall_index_min_items=1000", "memory", "stats", "--memory", uri]) == 0
    assert "LanceDB IVF_SQ over 1,200 items, 0 added since searched exactly; last refreshed 20" in capsys.readouterr().out
    assert main(["--set", "memory.recall_index_min_items=1000", "memory", "stats", "--json", "--memory", uri]) == 0
    index = json.loads(capsys.readouterr().out.strip().splitlines()[-1])["recall_index"]
    assert index["indexed"] and index["index"] == "IVF_SQ" and index["indexed_rows"] == 1200 and index["partitions"] > 1
    assert main(["memory", "stats", "--memory", uri]) == 0  # the default threshold: exact
    default = MemoryConfig.model_fields["recall_index_min_items"].default
    assert f"exact (in memory): an index from {default:,} items" in capsys.readouterr().out


def test_the_actor_refreshes_in_the_background_and_loses_no_update(ray_cluster, memory_config):
    import ray

    from memory_actor.actor_handle import get_or_create_memory_actor
    from memory_actor.values import RewardShaper, q_update

    first = MemoryBank(memory_config(recall_index_min_items=10**9))
    first.add(_items(1200))
    first.close()
    config = memory_config(**SMALL)
    actor = get_or_create_memory_actor(config)
    assert ray.get(actor.recall_state.remote())["indexed"]
    updates = [ValueUpdate(shown_ids=[f"item{(7 * k) % 1200}"], stage="draft", reward=(k % 3) - 1.0) for k in range(300)]
    late = _items(250, start=5000, seed=7)
    query = unit_vectors(1, seed=3)[0].tolist()
    refs = []
    for k, update in enumerate(updates):  # updates, adds (a refresh starts at 200 fresh) and retrievals interleaved
        refs.append(actor.update.remote(update))
        if k % 60 == 0:
            refs.append(actor.add.remote(late[k // 60 * 50:(k // 60 + 1) * 50]))
            refs.append(actor.retrieve.remote(RetrievalRequest(query="", stage="draft", backend="cpu",
                                                                 query_embedding=query, include_api=False)))
    results = ray.get(refs)
    acks = [result for result in results if hasattr(result, "seq") and hasattr(result, "update_id")]
    assert len(acks) == 300 and all(ack.durable for ack in acks)
    for _ in range(100):  # the refresh ends in the background
        state = ray.get(actor.recall_state.remote())
        if state["fresh_items"] < 200 and state.get("rows_added"):
            break
        time.sleep(0.1)
    assert state["rows_added"] >= 200 and state["rows"] >= 1400
    ray.get(actor.close.remote())
    ray.kill(actor)
    bank = MemoryBank(config)
    shaper, expected = RewardShaper(config), {}
    for update, _ack in sorted(zip(updates, acks, strict=True), key=lambda pair: pair[1].seq):
        _, advantage = shaper.shape(update.stage, update.reward)
        item_id = update.shown_ids[0]
        start = expected.get(item_id, bank.shaper.prior(_items(1200)[int(item_id[4:])]))
        expected[item_id] = q_update(start, advantage, config.alpha)
    assert {item_id: bank.get(item_id).q_draft for item_id in expected} == pytest.approx(expected)
    assert len(bank.items) == 1450 and bank.recall_state()["rows"] + len(bank.recall.fresh_rows) == 1450


def test_updates_taken_back_on_an_indexed_bank_leave_it_as_if_never_sent(memory_config):
    """Retraction (a resume takes back the updates of the attempts it redoes) on the index's bank,
    across a fold: the values come out as a bank that never got them."""
    from memory_actor.retraction import take_back, update_prefix

    config = {**SMALL, "baseline": False, "normalise_refine": False}
    bank = _bank(memory_config, 1200, **config)
    shown = [["item1", "item2"], ["item2", "item4"], ["item1"]]
    kept = [ValueUpdate(update_id=f"{update_prefix('run-1', 'a')}{k}", shown_ids=ids, stage="draft", reward=r)
            for k, (ids, r) in enumerate(zip(shown, [1.0, -1.0, 0.5], strict=True))]
    redone = [ValueUpdate(update_id=f"{update_prefix('run-1', 'b')}{k}", shown_ids=ids, stage="draft", reward=r)
              for k, (ids, r) in enumerate(zip(shown, [-1.0, 1.0, -1.0], strict=True))]
    for update in (redone[0], kept[0], redone[1], kept[1], redone[2], kept[2]):
        bank.stage_update(update)
    bank.compact()  # folded: the redone updates are in the history table now
    assert take_back(bank, [update_prefix("run-1", "b")]) == 3
    bank.close()
    twin = MemoryBank(memory_config(uri=bank.config.uri + "-twin", baseline=False, normalise_refine=False))
    twin.add(_items(1200))
    for update in kept:
        twin.stage_update(update)
    again = MemoryBank(memory_config(**config))
    assert again.recall is not None
    for item_id in ("item1", "item2", "item4"):
        assert again.get(item_id).q_draft == pytest.approx(twin.get(item_id).q_draft)
        assert again.get(item_id).visits_draft == twin.get(item_id).visits_draft


def test_items_deleted_since_leave_the_recall_table_at_the_next_opening(memory_config):
    bank = _bank(memory_config, 1200, **SMALL)
    target = bank.get("item5", with_embedding=True)
    bank.store.items.delete("id = 'item5'")  # what memory_actor.retraction does to a redone attempt's items
    bank.close()
    again = MemoryBank(memory_config(**SMALL))
    assert "item5" not in again.items and again.recall.table.state()["rows"] == 1199
    request = RetrievalRequest(query="", stage="draft", backend="cpu", query_embedding=target.embedding,
                               include_api=False)
    assert "item5" not in [item_id for item_id, _ in again.recall_pool(request)]
