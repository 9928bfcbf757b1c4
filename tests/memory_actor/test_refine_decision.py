"""The refine decision (issue 65, point 2): a refinement of a feasible kernel may be shown the next
rung up of its family and shape (a speed rung of the twin's bundle), an option valued like the
draft's options but in the refinement's own context (its start point's rung) and counted by the
refinement's tanh-log reward, (r + 1) / 2 of a success; the draft decision never lists a speed
rung. On a real bank seeded with the twin's bundle: retrieval, update, reopening, retraction."""

from __future__ import annotations

import math

import pytest

from memory_actor.bank import MemoryBank
from memory_actor.messages import RetrievalRequest, ValueUpdate
from memory_actor.retraction import take_back
from memory_actor.seeding import bundle_items
from memory_actor.slots import SlotOutcome, SlotRequest, slot_success, stat_key
from tests.memory_actor.conftest import unit_vectors

QUERY = unit_vectors(1, seed=5)[0]
SHAPE = "input float32[2], output float32[2], workspace, tiling; tiling: size 0.0, size 0.1, size 1.0, size 1.1, block_dim"
VECTOR = "vector_rung_elementwise_ex1_Log1pAbs"
KEY = stat_key("npu-twin", "elementwise", "refine@first", "vector")
BARE = stat_key("npu-twin", "elementwise", "refine@first", "bare")


def seeded(config) -> MemoryBank:
    bank = MemoryBank(config)
    items = bundle_items("npu-twin")
    vectors = unit_vectors(len(items), seed=3)
    bank.add([item.model_copy(update={"embedding": v.tolist()}) for item, v in zip(items, vectors, strict=True)])
    return bank


def refine(climb: str | None = VECTOR, context: str = "refine@first", seed: int = 0) -> RetrievalRequest:
    return RetrievalRequest(query="expm1", stage="refine", backend="npu-twin", seed=seed, kinds=["trace", "practice"],
                            query_embedding=QUERY.tolist(), family="elementwise", shape=SHAPE,
                            slot=SlotRequest(task_id="p1_Expm1", family="elementwise", shape=SHAPE, context=context,
                                             climb=climb))


def test_slot_success_is_the_tanh_log_reward_as_a_fraction():
    assert slot_success("draft", 1.0) == 1.0 and slot_success("draft", -1.0) == 0.0
    assert slot_success("refine", -1.0) == 0.0 and slot_success("refine", 0.0) == 0.5
    ten_times = math.tanh(math.log(10.0))
    assert slot_success("refine", ten_times) == pytest.approx(0.99, abs=0.005)


def test_the_refine_decision_offers_the_next_rung_alone_and_counts_the_speedup(memory_config):
    bank = seeded(memory_config(retrieval="value", shipped_rates=False))
    retrieval = bank.retrieve(refine())
    choice = retrieval.slot
    rung_id = next(i.id for i in bundle_items("npu-twin") if i.name == VECTOR)
    assert {(c.kind, c.option) for c in choice.candidates} == {("generic", "generic"), ("example", "vector")}
    assert [o.key for o in choice.options] == ["bare", "vector"]  # no +ranked: the refine stage's items always come
    values = {o.key: o for o in choice.options}
    assert values["vector"].mean == pytest.approx(values["bare"].mean)  # untried: no lift assumed
    assert choice.reason == "thompson" and choice.context == "refine@first"
    assert retrieval.items, "a refinement's ranked items are recalled whatever the decision"
    if choice.kind == "example":
        assert retrieval.slot_item.id == rung_id and retrieval.slot_item.name == VECTOR
    # a refinement 100x faster than the best so far, shown the rung; one as fast, shown the brief alone
    fast = math.tanh(math.log(100.0))
    bank.update(ValueUpdate(update_id="r1", shown_ids=[rung_id], stage="refine", reward=fast,
                            slot=SlotOutcome(backend="npu-twin", family="elementwise", context="refine@first",
                                             key=rung_id, kind="example", option="vector", task_id="p1_Expm1")))
    bank.update(ValueUpdate(update_id="r2", shown_ids=[], stage="refine", reward=0.0,
                            slot=SlotOutcome(backend="npu-twin", family="elementwise", context="refine@first",
                                             key="generic", kind="generic", task_id="p1_Expm1")))
    successes, trials = bank.slots.get(KEY)
    assert trials == 1 and successes == pytest.approx((fast + 1) / 2)
    assert bank.slots.get(BARE) == (0.5, 1)
    assert bank.get(rung_id).q_refine != bank.get(rung_id).q_draft  # the rung's Q2 moved with the reward it was shown for
    after = {o.key: o for o in bank.retrieve(refine(), record=False).slot.options}
    assert after["vector"].mean > after["bare"].mean
    # the draft contexts and the other refine context are apart
    assert bank.slots.get(stat_key("npu-twin", "elementwise", "fresh", "vector")) == (0, 0)
    assert {o.key: o for o in bank.retrieve(refine(context="refine@vector"), record=False).slot.options}[
        "vector"].trials == 0
    uri = bank.config.uri
    bank.close()
    reopened = MemoryBank(memory_config(retrieval="value", shipped_rates=False, uri=uri))
    assert reopened.slots.get(KEY)[0] == pytest.approx((fast + 1) / 2) and reopened.slots.get(BARE) == (0.5, 1)
    # a resume that throws the second refinement away takes its count back
    assert take_back(reopened, ["r2"]) == 1
    assert reopened.slots.get(BARE) == (0, 0) and reopened.slots.get(KEY)[1] == 1
    reopened.close()


def test_a_draft_never_lists_a_speed_rung_and_a_refinement_without_a_rung_above_has_no_option(memory_config):
    bank = seeded(memory_config(retrieval="value", shipped_rates=False))
    draft = RetrievalRequest(query="expm1", stage="draft", backend="npu-twin", seed=0, query_embedding=QUERY.tolist(),
                             family="elementwise", shape=SHAPE,
                             slot=SlotRequest(task_id="p1_Expm1", family="elementwise", shape=SHAPE,
                                              example="example_elementwise", rung=VECTOR))  # even when named
    options = {c.option for c in bank.retrieve(draft).slot.candidates}
    assert "vector" not in options and "double_buffer" not in options
    nothing = bank.retrieve(refine(climb=None)).slot
    assert [c.kind for c in nothing.candidates] == ["generic"] and nothing.option == "bare"
    bank.close()


def test_the_none_arm_refines_with_the_static_brief(memory_config):
    bank = seeded(memory_config(retrieval="none"))
    retrieval = bank.retrieve(refine())
    assert retrieval.slot.option == "bare" and retrieval.slot_item is None and retrieval.items == []
    bank.close()
