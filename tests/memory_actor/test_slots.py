"""The one decision beyond the brief in the bank (memory_actor/slots.py, bank_retrieval.py): its
candidates, the modes' choices, ranked items only where the option asks for them, the options
examples declare, and its statistics (credited by the draft's update, durable, replayed after a
restart, served by the Ray actor). What each option is worth, without a bank: test_slot_values.py."""

from __future__ import annotations

import pytest
import ray

from memory_actor.actor import MemoryActor
from memory_actor.bank import MemoryBank
from memory_actor.config import MemoryConfig
from memory_actor.items import ItemVerdict, MemoryItem
from memory_actor.messages import RetrievalRequest, ValueUpdate
from memory_actor.seeding import bundle_items
from memory_actor.slots import SlotRequest, stat_key
from tests.memory_actor.conftest import near, unit_vectors
from tests.memory_actor.test_slot_values import outcome

SHAPE = "const float*,float*,int64_t,int64_t"
QUERY = unit_vectors(1, seed=7)[0]


def kernel(task: str, family: str, shape: str = SHAPE, similarity: float = 0.8, gate: str = "ok",
           seed: int = 1) -> MemoryItem:
    return MemoryItem(kind="trace", backend="cpu", task_id=task, stage="draft", content=f"// {task}\nvoid kernel() {{}}",
                      task_signature="sig", verdict=ItemVerdict(gate=gate), tags=[f"family:{family}", f"shape:{shape}"],
                      embedding=near(QUERY, similarity, seed=seed).tolist())


def example(name: str = "example_elementwise") -> MemoryItem:
    return MemoryItem(kind="api", backend="cpu", name=name, content="for (...) out[i] = f(x[i]);",
                      tags=["bundle", "example", "family:elementwise"], embedding=near(QUERY, 0.5, seed=99).tolist())


def practice() -> MemoryItem:
    return MemoryItem(kind="practice", backend="cpu", content="parallelise the outer loop",
                      embedding=near(QUERY, 0.4, seed=98).tolist())


def request(context: str = "fresh", task: str = "9_LeakyReLU", seed: int | None = None) -> RetrievalRequest:
    return RetrievalRequest(query="leaky relu", stage="draft", backend="cpu", query_embedding=QUERY.tolist(), seed=seed,
                            family="elementwise", shape=SHAPE,
                            slot=SlotRequest(task_id=task, family="elementwise", shape=SHAPE, context=context,
                                             example="example_elementwise"))


def fill(bank: MemoryBank) -> dict[str, str]:
    items = {"relu": kernel("4_ReLU", "elementwise", similarity=0.9, seed=1),
             "relu_old": kernel("4_ReLU", "elementwise", similarity=0.6, seed=2),
             "sigmoid": kernel("7_Sigmoid", "elementwise", similarity=0.7, seed=3),
             "softmax": kernel("18_Softmax", "softmax_norm", similarity=0.95, seed=4),  # same shape, other family
             "wide": kernel("6_Wide", "elementwise", shape=SHAPE + ",double", similarity=0.95, seed=5),
             "broken": kernel("8_Tanh", "elementwise", gate="correctness", similarity=0.95, seed=6),
             "own": kernel("9_LeakyReLU", "elementwise", similarity=0.99, seed=8),
             "example": example()}
    ids = bank.add(list(items.values()))
    return dict(zip(items, ids, strict=True))


def test_candidates_are_the_generic_example_the_family_example_and_same_family_same_shape_kernels(memory_config):
    bank = MemoryBank(memory_config(retrieval="similarity"))
    ids = fill(bank)
    retrieval = bank.retrieve(request())
    choice = retrieval.slot
    kinds = {c.key: c.kind for c in choice.candidates}
    # One kernel per operator (its nearest), never another family's, another shape's, a failed one or the task's own.
    assert kinds == {"generic": "generic", ids["example"]: "example", ids["relu"]: "kernel", ids["sigmoid"]: "kernel"}
    assert choice.chosen == ids["relu"] and choice.kind == "kernel"  # similarity: the nearest kernel
    assert choice.ranked and choice.option == "kernels+ranked"  # similarity always recalls its N items
    assert retrieval.slot_item is not None and retrieval.slot_item.id == ids["relu"]
    # the ranked items are scoped too: no kernel of another family or shape, no failed trace
    assert {i.id for i in retrieval.items if i.kind == "trace"} <= {ids["relu"], ids["relu_old"], ids["sigmoid"],
                                                                      ids["own"]}
    bank.close()


def test_similarity_takes_the_example_without_a_kernel_and_none_the_generic_example(memory_config, tmp_path):
    bank = MemoryBank(memory_config(retrieval="similarity"))
    [example_id] = bank.add([example()])
    assert bank.retrieve(request()).slot.chosen == example_id
    bank.close()
    none = MemoryBank(memory_config(retrieval="none", uri=str(tmp_path / "none")))
    none.add([example(), example("kernel").model_copy(update={"tags": ["bundle", "core"]})])
    retrieval = none.retrieve(request())
    assert retrieval.slot.chosen == "generic" and retrieval.slot_item is None
    assert [i.name for i in retrieval.api_items] == ["kernel"]  # the static brief: core API items in every arm
    none.close()


def test_ranked_items_are_recalled_only_when_the_decision_asks_for_them(memory_config):
    bank = MemoryBank(memory_config(retrieval="value", cold_drafts=0))
    ids = fill(bank)
    bank.add([practice()])
    seen = {"bare": 0, "ranked": 0, "alone": 0}
    for seed in range(40):
        retrieval = bank.retrieve(request(seed=seed))
        choice = retrieval.slot
        if choice.kind == "generic":
            assert not choice.ranked and retrieval.items == [] and retrieval.slot_item is None
            seen["bare"] += 1
        elif choice.ranked:
            assert retrieval.items and ids["softmax"] not in retrieval.item_ids and ids["wide"] not in retrieval.item_ids
            seen["ranked"] += 1
        else:
            assert retrieval.items == []
            seen["alone"] += 1
    assert all(seen.values()), seen  # uniform priors: every option is tried
    bank.close()


def test_a_bank_lists_the_examples_the_brief_offers_under_their_declared_options(memory_config):
    """The options come from data: an example item of the family tagged `option:rung` (what a bundle
    entry's `option` field gives, memory_actor/seeding.py) is a candidate and an option beside the
    family's example, with no code naming the option; another family's examples are not, and
    neither is an example the brief does not offer (SlotRequest.rung None: its signature does not
    map onto the task's, actors/briefing.py)."""
    bank = MemoryBank(memory_config(retrieval="value", slot_greedy=True))
    rung = example("rung_elementwise").model_copy(update={"tags": ["bundle", "example", "family:elementwise",
                                                                   "option:rung"]})
    other = example("example_matmul").model_copy(update={"tags": ["bundle", "example", "family:matmul"]})
    ids = dict(zip(("example", "rung", "other"), bank.add([example(), rung, other]), strict=True))
    offered = request()
    offered.slot.rung = "rung_elementwise"
    choice = bank.retrieve(offered).slot
    assert {c.key: c.option for c in choice.candidates} == {"generic": "generic", ids["example"]: "example",
                                                            ids["rung"]: "rung"}
    assert {o.key for o in choice.options} == {"bare", "example", "example+ranked", "rung", "rung+ranked"}
    not_offered = bank.retrieve(request()).slot
    assert {c.key: c.option for c in not_offered.candidates} == {"generic": "generic", ids["example"]: "example"}
    bank.close()


def test_a_users_first_ascend_c_draft_on_a_fresh_bank(memory_config):
    """`evokernel run --backend npu-twin --tasks 4_ReLU.py` on a fresh bank (issue 54.6): the
    bank holds the twin's bundle; the first draft's decision spends nothing measuring a cold rate
    (the default model's shipped 0 of 36 is bare's prior), lists the family's bundle examples as
    options, and starts the elementwise example (and its ranked variant) from its published 0 of 32
    (below bare) and the first rung from the twin pilots' 6 of 16 (the v5 pilot's 4 of 8, the v6
    pilot's 2 of 8; above bare)."""
    bank = MemoryBank(memory_config(retrieval="value"))
    items = bundle_items("npu-twin")
    vectors = unit_vectors(len(items), seed=3)
    bank.add([item.model_copy(update={"embedding": vector.tolist()}) for item, vector in zip(items, vectors, strict=True)])
    slot = SlotRequest(task_id="4_ReLU", family="elementwise", shape="GM_ADDR,GM_ADDR,GM_ADDR", context="fresh",
                       example="example_elementwise", rung="rung_elementwise")
    retrieval = bank.retrieve(RetrievalRequest(query="relu", stage="draft", backend="npu-twin", seed=0,
                                               query_embedding=QUERY.tolist(), family="elementwise", slot=slot))
    choice = retrieval.slot
    assert choice.reason == "thompson"
    examples = [c for c in choice.candidates if c.kind == "example"]
    assert examples and {bank.items[c.key].name for c in examples} >= {"example_elementwise", "rung_elementwise"}
    options = {o.key: o for o in choice.options}
    assert options["bare"].prior == pytest.approx((1, 9))  # slot prior with 0 of 36 counted as 8 drafts
    assert options["example"].mean < options["bare"].mean
    assert options["example+ranked"].mean < options["bare"].mean  # it starts where the example's evidence put it
    # bare's prior plus 6 of 16 counted as 3 of 8: mean 0.22 against 0.10, better than bare in about 4 of 5 draws
    assert options["rung"].prior == pytest.approx((4, 14)) and options["rung"].better > 0.75
    assert options["rung+ranked"].mean == pytest.approx(options["rung"].mean)  # X+ranked starts where X is
    assert (choice.kind, choice.option) in {("example", "rung"), ("example", "rung+ranked")}  # this seed's draw
    bank.close()


def test_a_bundle_entry_declares_an_option_by_its_option_field():
    from memory_actor.seeding import example_option

    assert example_option({"name": "example_scan"}) == "example"
    assert example_option({"name": "rung_scan", "option": "rung"}) == "rung"
    for bad in ("bare", "kernels", "Rung", "rung/1"):
        with pytest.raises(ValueError):
            example_option({"name": "x", "option": bad})
    # the cpu bundle's examples: the idiomatic ones under `example`, the first rungs (`option: rung`) under `rung`
    assert all(item.tag_values()["option"] == ("rung" if item.name.startswith("rung_") else "example")
               for item in bundle_items("cpu") if "example" in item.tags)


def test_slot_outcomes_are_credited_by_the_update_once_each(memory_config):
    config = memory_config(retrieval="value")
    bank = MemoryBank(config)
    ids = fill(bank)
    shown = outcome(ids["relu"], "kernel")
    for reward in (1.0, -1.0, -1.0):
        bank.update(ValueUpdate(shown_ids=[ids["relu"]], stage="draft", reward=reward, slot=shown))
    bank.update(ValueUpdate(shown_ids=[ids["relu"]], stage="draft", reward=1.0,
                            slot=outcome(ids["relu"], "kernel", ranked=True)))
    retried = ValueUpdate(shown_ids=[], stage="draft", reward=1.0, slot=outcome("generic", "generic"))
    bank.update(retried)
    bank.update(retried)  # a retried call counts once
    key = stat_key("cpu", "elementwise", "fresh", ids["relu"])
    expected = {key: [2, 4], stat_key("cpu", "elementwise", "fresh", "kernels"): [1, 3],
                stat_key("cpu", "elementwise", "fresh", "kernels+ranked"): [1, 1],
                stat_key("cpu", "elementwise", "fresh", "bare"): [1, 1],
                stat_key("cpu", "elementwise", "fresh", "all"): [3, 5]}
    assert bank.stats(disk=False).slots == expected
    bank.close()
    assert MemoryBank(config, read_only=True).stats(disk=False).slots == expected


def test_slot_counts_replay_from_the_log_and_from_a_fold(memory_config):
    config = memory_config(retrieval="value")
    bank = MemoryBank(config)
    ids = fill(bank)
    shown = outcome(ids["sigmoid"], "kernel", "retry")
    bank.update(ValueUpdate(shown_ids=[ids["sigmoid"]], stage="draft", reward=1.0, slot=shown))
    bank.store.close()  # a crash after the update was durable: the lease goes, nothing is folded
    replayed = MemoryBank(config)
    key = stat_key("cpu", "elementwise", "retry", ids["sigmoid"])
    assert replayed.stats(disk=False).slots[key] == [1, 1]
    replayed.update(ValueUpdate(shown_ids=[], stage="draft", reward=-1.0, slot=shown))
    replayed.close()  # folds: the counts move to meta and their log rows go
    folded = MemoryBank(config)
    assert folded.stats(disk=False).slots[key] == [1, 2]
    assert "slot" not in set(folded.store.read_log().column("type").to_pylist())
    choice = folded.retrieve(request("retry")).slot
    assert {c.key: (c.successes, c.trials) for c in choice.candidates}[ids["sigmoid"]] == (1, 2)
    folded.close()


def test_the_ray_memory_actor_serves_the_slot_and_credits_it(memory_config, ray_cluster):
    config = memory_config(retrieval="value")
    bank = MemoryBank(config)
    ids = fill(bank)
    bank.close()
    actor = ray.remote(MemoryActor).remote(config.model_dump())
    retrieval = ray.get(actor.retrieve.remote(request(seed=3)))
    assert retrieval.slot is not None and {c.key for c in retrieval.slot.candidates} >= {"generic", ids["relu"]}
    ack = ray.get(actor.update.remote(ValueUpdate(shown_ids=[ids["relu"]], stage="draft", reward=-1.0,
                                                  slot=outcome(ids["relu"], "kernel"))))
    assert ack.durable
    stats = ray.get(actor.stats.remote(False))
    assert stats.slots[stat_key("cpu", "elementwise", "fresh", ids["relu"])] == [0, 1]
    ray.kill(actor)


def test_a_run_recorded_with_the_retired_memory_prior_still_loads():
    """A summary.json written before issue 54 records `memory_prior`; a resume loads it, leaves the
    setting out and says so; a setting that never existed is still refused."""
    from structlog.testing import capture_logs

    with capture_logs() as logs:
        config = MemoryConfig.model_validate({"memory_prior": [1.0, 2.0], "slot_greedy": True})
    assert config.slot_greedy and not hasattr(config, "memory_prior")
    assert [entry["setting"] for entry in logs if entry["event"] == "retired_setting_ignored"] == ["memory_prior"]
    with pytest.raises(ValueError):
        MemoryConfig.model_validate({"memory_priors": [1.0, 2.0]})
