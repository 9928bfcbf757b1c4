"""Taking back value updates (memory_actor.retraction) on real banks: the bank ends as if the
taken-back updates never happened, later updates keep their effect, and it survives a reopen."""

from __future__ import annotations

import pytest

from memory_actor.bank import MemoryBank
from memory_actor.items import MemoryItem
from memory_actor.messages import ValueUpdate
from memory_actor.retraction import take_back, update_prefix
from tests.memory_actor.conftest import unit_vectors

VECTORS = unit_vectors(4)


def _bank(memory_config, name: str, **config) -> tuple[MemoryBank, list[str]]:
    bank = MemoryBank(memory_config(uri=str(memory_config().uri) + name, **config))
    ids = bank.add([MemoryItem(id=f"item-{i}", kind="practice", backend="cpu", summary=f"practice {i}",
                               content=f"practice {i}", embedding=VECTORS[i].tolist()) for i in range(4)])
    return bank, ids


def _updates(run: str, task: str, shown: list[list[str]], rewards: list[float], stage: str = "draft"):
    return [ValueUpdate(update_id=f"{update_prefix(run, task)}{k}", shown_ids=ids, stage=stage, reward=reward)
            for k, (ids, reward) in enumerate(zip(shown, rewards, strict=True))]


def _values(bank: MemoryBank, ids: list[str]) -> dict[str, tuple[float, int, float, int]]:
    return {i: (round(bank.get(i).q_draft, 9), bank.get(i).visits_draft, round(bank.get(i).q_refine, 9),
                bank.get(i).visits_refine) for i in ids}


@pytest.mark.parametrize("stage", ["draft", "refine"])
def test_taken_back_updates_leave_the_bank_as_if_never_sent(memory_config, stage):
    # Plain EMA steps towards the reward (no baseline, no normalising): what would have happened
    # without the taken-back updates is then a bank that never got them.
    config = {"baseline": False, "normalise_refine": False}
    bank, ids = _bank(memory_config, "-all", **config)
    kept = _updates("run-1", "6_SiLU", [ids[:2], ids[1:3], ids[2:]], [1.0, -1.0, 0.5], stage)
    redone = _updates("run-1", "4_ReLU", [ids[:3], ids[1:], [ids[0]]], [-1.0, -1.0, 1.0], stage)
    other_run = _updates("run-0", "4_ReLU", [ids[3:]], [1.0], stage)
    for update in (redone[0], kept[0], redone[1], other_run[0], kept[1], redone[2], kept[2]):  # interleaved
        bank.stage_update(update)
    bank.flush()

    assert take_back(bank, [update_prefix("run-1", "4_ReLU")]) == 3
    bank.flush()
    expected, _ = _bank(memory_config, "-kept", **config)
    for update in (kept[0], other_run[0], kept[1], kept[2]):
        expected.stage_update(update)
    assert _values(bank, ids) == _values(expected, ids)
    assert bank.stats().updates == 4

    assert take_back(bank, [update_prefix("run-1", "4_ReLU")]) == 0  # once only
    bank.close()
    reopened = MemoryBank(bank.config)  # retract rows replay to the same values
    assert _values(reopened, ids) == _values(expected, ids)
    assert reopened.stats().updates == 4
    reopened.compact()  # folded: the retract rows leave the log with the updates
    assert MemoryBank(bank.config).stats().log_rows == 0
    assert _values(MemoryBank(bank.config), ids) == _values(expected, ids)


def test_nothing_to_take_back_changes_nothing(memory_config):
    bank, ids = _bank(memory_config, "")
    bank.update(_updates("run-1", "6_SiLU", [ids[:2]], [1.0])[0])
    before = _values(bank, ids)
    assert take_back(bank, [update_prefix("run-1", "4_ReLU"), update_prefix("run-2", "6_SiLU")]) == 0
    assert _values(bank, ids) == before and not bank.pending


def test_updates_folded_before_the_resume_are_taken_back_too(memory_config):
    # A run killed, its bank then closed by another writer (closing folds the log into the items
    # table), then resumed: the discarded attempts' updates are in the history table, not the log.
    config = {"baseline": False, "normalise_refine": False}
    bank, ids = _bank(memory_config, "-folded", **config)
    kept = _updates("run-1", "6_SiLU", [ids[:2], ids[1:3], ids[2:]], [1.0, -1.0, 0.5])
    redone = _updates("run-1", "4_ReLU", [ids[:3], ids[1:], [ids[0]]], [-1.0, -1.0, 1.0])
    for update in (redone[0], kept[0], redone[1]):
        bank.stage_update(update)
    bank.close()
    reopened = MemoryBank(bank.config)
    assert reopened.stats().log_rows == 0 and reopened.store.read_history().num_rows == 3  # folded away
    for update in (kept[1], redone[2], kept[2]):  # more after the fold: both kinds
        reopened.stage_update(update)
    reopened.flush()

    assert take_back(reopened, [update_prefix("run-1", "4_ReLU")]) == 3
    reopened.flush()
    expected, _ = _bank(memory_config, "-folded-kept", **config)
    for update in kept:
        expected.stage_update(update)
    assert _values(reopened, ids) == _values(expected, ids)
    assert reopened.stats().updates == 3
    reopened.compact()  # folded again, the retract rows with it
    again = MemoryBank(bank.config)
    assert _values(again, ids) == _values(expected, ids) and again.stats().updates == 3
    assert take_back(again, [update_prefix("run-1", "4_ReLU")]) == 0  # once only, also after folds


def test_the_history_keeps_the_newest_rows(memory_config):
    bank, ids = _bank(memory_config, "-history", history_keep_rows=2)
    for update in _updates("run-1", "4_ReLU", [[ids[0]]] * 4, [1.0, -1.0, 1.0, -1.0]):
        bank.update(update)
    bank.compact()
    history = bank.store.read_history()
    assert history.column("ref_id").to_pylist() == ["run-1/4_ReLU/2", "run-1/4_ReLU/3"]
    assert take_back(bank, [update_prefix("run-1", "4_ReLU")]) == 2  # older ones are beyond reach


def test_a_redone_operators_traces_and_lessons_leave_the_bank(memory_config):
    """Issue 63: the items the discarded attempts added (their traces and lessons) are deleted, so
    no later prompt shows them; the run's other operators, other runs and seeded items stay."""
    from memory_actor.items import ItemVerdict
    from memory_actor.messages import RetrievalRequest
    from memory_actor.retraction import take_back_items

    bank, ids = _bank(memory_config, "-items")
    vector = VECTORS[0].tolist()

    def trace(item_id: str, run: str, task: str) -> MemoryItem:
        return MemoryItem(id=item_id, kind="trace", backend="cpu", task_id=task, run_id=run, stage="draft",
                          content=f"kernel of {item_id}", summary=item_id, embedding=vector,
                          verdict=ItemVerdict(gate="ok", latency_ms=1.0))

    def lesson(item_id: str, run: str, task: str, parent: str) -> MemoryItem:
        return MemoryItem(id=item_id, kind="experience", backend="cpu", task_id=task, run_id=run, stage="draft",
                          content=f"lesson {item_id}", summary=item_id, parent_id=parent, embedding=vector)

    bank.add([trace("redone-trace", "run-1", "4_ReLU"), lesson("redone-lesson", "run-1", "4_ReLU", "redone-trace"),
              trace("kept-trace", "run-1", "6_SiLU"), trace("other-run", "run-0", "4_ReLU")])
    assert {c.id for c in bank.children("redone-trace")} == {"redone-lesson"}

    def recalled(open_bank: MemoryBank) -> set[str]:
        request = RetrievalRequest(query="relu", stage="draft", backend="cpu", kinds=["trace", "experience"], n=10,
                                   query_embedding=vector, include_api=False)
        return {item.id for item in open_bank.retrieve(request, record=False).items}

    assert {"redone-trace", "redone-lesson"} <= recalled(bank)
    assert take_back_items(bank, "run-1", ["4_ReLU"]) == 2
    assert recalled(bank) == {"kept-trace", "other-run"}  # out of the open bank's reach at once
    assert bank.children("redone-trace") == []
    assert take_back_items(bank, "run-1", ["4_ReLU"]) == 0  # once only
    bank.close()
    reopened = MemoryBank(bank.config)
    assert reopened.get("redone-trace") is None and reopened.get("redone-lesson") is None
    assert {"kept-trace", "other-run", *ids} <= set(reopened.ids())
    assert recalled(reopened) == {"kept-trace", "other-run"}
    assert take_back_items(reopened, "run-1", ["4_ReLU"]) == 0
