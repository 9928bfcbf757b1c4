"""The family's first rung as options of the draft's decision (issue 54, point 2): `rung` and
`rung+ranked` beside `example` (a bundle example declared `option: rung`), candidates the bank
lists when the request names them, chosen on
their evidence, counted by the draft's update, and a start that shows the rung whatever the
values say (the learning pass's first draft of an operator)."""

from __future__ import annotations

import numpy as np
import pytest

from memory_actor.bank import MemoryBank
from memory_actor.messages import RetrievalRequest, ValueUpdate
from memory_actor.slots import SlotCandidate, SlotOutcome, SlotRequest, SlotStats, decide, stat_key
from tests.memory_actor.conftest import near, unit_vectors
from tests.memory_actor.test_slots import example

SHAPE = "const float*,float*,int64_t,int64_t"
QUERY = unit_vectors(1, seed=7)[0]


def rung():
    return example("rung_elementwise").model_copy(update={
        "tags": ["bundle", "example", "family:elementwise", "option:rung"], "content": "for (i) out[i] = x[i];",
        "embedding": near(QUERY, 0.45, seed=97).tolist()})


def request(start: str | None = None, context: str = "fresh") -> RetrievalRequest:
    return RetrievalRequest(query="leaky relu", stage="draft", backend="cpu", query_embedding=QUERY.tolist(),
                            family="elementwise", shape=SHAPE,
                            slot=SlotRequest(task_id="9_LeakyReLU", family="elementwise", shape=SHAPE, context=context,
                                             example="example_elementwise", rung="rung_elementwise", start=start))


def test_the_bank_lists_the_rung_beside_the_example_and_a_start_shows_it_alone(memory_config):
    # no shipped option records: this is about an option no draft has tried yet
    bank = MemoryBank(memory_config(retrieval="value", cold_rates={"cpu/elementwise": [9, 10]}, shipped_rates=False))
    rung_id, example_id = bank.add([rung(), example()])
    retrieval = bank.retrieve(request())
    options = {c.key: (c.kind, c.option) for c in retrieval.slot.candidates}
    assert options == {"generic": ("generic", "generic"), rung_id: ("example", "rung"), example_id: ("example", "example")}
    assert {o.key for o in retrieval.slot.options} == {"bare", "rung", "rung+ranked", "example", "example+ranked"}
    # valued like any option: untried, the rung starts at bare's posterior (no lift assumed)
    values = {o.key: o for o in retrieval.slot.options}
    assert values["rung"].mean == pytest.approx(values["bare"].mean) and values["rung"].trials == 0
    started = bank.retrieve(request(start="rung"))
    assert (started.slot.chosen, started.slot.kind, started.slot.option) == (rung_id, "example", "rung")
    assert started.slot.reason == "start" and not started.slot.ranked and started.items == []
    assert started.slot_item is not None and started.slot_item.id == rung_id
    # the draft's update counts its verdict for the rung option
    bank.update(ValueUpdate(update_id="u1", shown_ids=[rung_id], stage="draft", reward=1.0,
                            slot=SlotOutcome(backend="cpu", family="elementwise", context="fresh", key=rung_id,
                                             kind="example", option="rung")))
    assert bank.slots.get(stat_key("cpu", "elementwise", "fresh", "rung")) == (1, 1)
    assert bank.slots.get(stat_key("cpu", "elementwise", "fresh", "all")) == (1, 1)
    bank.close()


def test_no_start_where_there_is_no_memory(memory_config, tmp_path):
    none = MemoryBank(memory_config(retrieval="none", uri=str(tmp_path / "none")))
    none.add([rung()])
    retrieval = none.retrieve(request(start="rung"))
    assert retrieval.slot.chosen == "generic" and retrieval.slot_item is None
    none.close()


def test_value_mode_shows_the_rung_where_its_evidence_beats_bare_and_the_example(memory_config):
    stats = SlotStats()
    for key, (successes, drafts) in {"bare": (1, 12), "rung": (9, 12), "example": (2, 12)}.items():
        stats.set(stat_key("cpu", "elementwise", "fresh", key), successes, drafts)
    config = memory_config(retrieval="value", slot_greedy=True)
    candidates = [SlotCandidate(key="generic", kind="generic"), SlotCandidate(key="r", kind="example", option="rung"),
                  SlotCandidate(key="ex", kind="example")]
    slot = SlotRequest(task_id="t", family="elementwise", context="fresh")
    choice = decide("value", "cpu", slot, candidates, stats, config, np.random.default_rng(0))
    assert (choice.chosen, choice.kind, choice.option, choice.ranked) == ("r", "example", "rung", False)
    # and with ranked items where that is what earned it
    stats.set(stat_key("cpu", "elementwise", "fresh", "rung+ranked"), 12, 12)
    choice = decide("value", "cpu", slot, candidates, stats, config, np.random.default_rng(0))
    assert (choice.chosen, choice.option, choice.ranked) == ("r", "rung+ranked", True)
