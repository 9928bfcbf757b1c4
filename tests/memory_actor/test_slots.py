"""The one decision beyond the brief (memory_actor/slots.py): its options and candidates, the
modes' choices, ranked items only where the option asks for them, bare's cold prior, and its
statistics in the bank (credited by the draft's update, durable, replayed after a restart,
served by the Ray actor)."""

from __future__ import annotations

import numpy as np
import ray

from memory_actor.actor import MemoryActor
from memory_actor.bank import MemoryBank
from memory_actor.config import MemoryConfig
from memory_actor.items import ItemVerdict, MemoryItem
from memory_actor.messages import RetrievalRequest, ValueUpdate
from memory_actor.slots import SlotCandidate, SlotOutcome, SlotRequest, SlotStats, decide, stat_key
from tests.memory_actor.conftest import near, unit_vectors

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


def outcome(key: str, kind: str, context: str = "fresh", ranked: bool = False) -> SlotOutcome:
    return SlotOutcome(backend="cpu", family="elementwise", context=context, key=key, kind=kind, ranked=ranked)


def picks(stats: SlotStats, context: str, config: MemoryConfig, draws: int = 400) -> dict[str, int]:
    rng = np.random.default_rng(0)
    counts: dict[str, int] = {}
    for _ in range(draws):
        candidates = [SlotCandidate(key="generic", kind="generic"), SlotCandidate(key="ex", kind="example"),
                      SlotCandidate(key="k1", kind="kernel"), SlotCandidate(key="k2", kind="kernel")]  # k2: new
        slot = SlotRequest(task_id="t", family="elementwise", shape="", context=context)
        choice = decide("value", "cpu", slot, candidates, stats, config, rng)
        key = f"{choice.chosen}{'+ranked' if choice.ranked else ''}"
        counts[key] = counts.get(key, 0) + 1
    return counts


def test_thompson_sampling_learns_which_option_helps_per_context():
    """Fresh drafts: bare succeeds 7 in 10, the family's kernels 1 in 10, with ranked items 0 in
    10; retries: a kernel alone helps. Value mode then mostly sends fresh drafts bare and shows a
    kernel (without the ranked items) on retries; a kernel new to the slot starts from its
    family's pooled record."""
    stats = SlotStats()
    for context, bare, kernels in (("fresh", 7, 1), ("retry", 0, 3)):
        for success in range(10):
            stats.record(outcome("generic", "generic", context), success < bare)
            stats.record(outcome("k1", "kernel", context), success < kernels)
            stats.record(outcome("k1", "kernel", context, ranked=True), False)
            stats.record(outcome("ex", "example", context), False)
            stats.record(outcome("ex", "example", context, ranked=True), False)
    config = MemoryConfig(cold_drafts=0)
    fresh, retry = picks(stats, "fresh", config), picks(stats, "retry", config)
    assert fresh.get("generic", 0) > 0.85 * 400 and fresh.get("k2", 0) < 0.05 * 400, fresh
    assert "generic+ranked" not in fresh  # ranked items come only with a family example or kernel
    assert retry.get("generic", 0) < 0.1 * 400 and retry.get("k1", 0) + retry.get("k2", 0) > 0.7 * 400, retry
    candidates = [SlotCandidate(key="generic", kind="generic"), SlotCandidate(key="k1", kind="kernel")]
    choice = decide("value", "cpu", SlotRequest(task_id="t", family="elementwise", context="fresh"), candidates, stats,
                    config, np.random.default_rng(0))
    assert candidates[0].successes == 7 and candidates[0].trials == 10
    assert candidates[1].successes == 1 and candidates[1].trials == 20  # the kernel with and without ranked items
    options = {o.key: (o.successes, o.trials) for o in choice.options}
    assert options == {"bare": (7, 10), "kernels": (1, 10), "kernels+ranked": (0, 10)}
    assert choice.reason == "thompson"
    greedy = decide("value", "cpu", SlotRequest(task_id="t", family="elementwise", context="fresh"), candidates, stats,
                    config.model_copy(update={"slot_greedy": True}), np.random.default_rng(0))
    assert (greedy.chosen, greedy.reason) == ("generic", "greedy")  # a frozen bank's choice says it is no draw


def test_bare_starts_from_the_familys_cold_rate_or_measures_it_first():
    """A family the model knows (screening: 6 of 10 cold drafts right) is sent bare from the start;
    one it does not know (0 of 10) gets its example; without a cold record, the first fresh drafts
    are bare until they have measured it."""
    stats = SlotStats()
    known = MemoryConfig(cold_rates={"cpu/elementwise": (6, 10)}, cold_prior_strength=8.0)
    unknown = MemoryConfig(cold_rates={"cpu/elementwise": (0, 10)}, cold_prior_strength=8.0)
    assert picks(stats, "fresh", known).get("generic", 0) > picks(stats, "fresh", unknown).get("generic", 0) + 100
    measuring = picks(stats, "fresh", MemoryConfig(cold_drafts=2), draws=20)
    assert measuring == {"generic": 20}  # no draft recorded yet: all of them measure the cold rate
    for success in (False, False):
        stats.record(outcome("generic", "generic"), success)
    assert picks(stats, "fresh", MemoryConfig(cold_drafts=2)).get("generic", 0) < 200  # measured: 0 of 2
    assert picks(SlotStats(), "retry", MemoryConfig(cold_drafts=2), draws=50).get("generic", 0) < 50  # fresh only


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
