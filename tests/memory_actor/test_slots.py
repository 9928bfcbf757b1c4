"""The worked-example slot: its candidates, the modes' choices, and its statistics in the bank
(credited by the draft's update, durable, replayed after a restart, served by the Ray actor)."""

from __future__ import annotations

import numpy as np
import ray

from memory_actor.actor import MemoryActor
from memory_actor.bank import MemoryBank
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


def template(name: str = "template_elementwise") -> MemoryItem:
    return MemoryItem(kind="api", backend="cpu", name=name, content="for (...) out[i] = f(x[i]);", tags=["bundle"],
                      embedding=near(QUERY, 0.5, seed=99).tolist())


def request(context: str = "fresh", task: str = "9_LeakyReLU", seed: int | None = None) -> RetrievalRequest:
    return RetrievalRequest(query="leaky relu", stage="draft", backend="cpu", query_embedding=QUERY.tolist(), seed=seed,
                            slot=SlotRequest(task_id=task, family="elementwise", shape=SHAPE, context=context,
                                             template="template_elementwise"))


def fill(bank: MemoryBank) -> dict[str, str]:
    items = {"relu": kernel("4_ReLU", "elementwise", similarity=0.9, seed=1),
             "relu_old": kernel("4_ReLU", "elementwise", similarity=0.6, seed=2),
             "sigmoid": kernel("7_Sigmoid", "elementwise", similarity=0.7, seed=3),
             "softmax": kernel("18_Softmax", "softmax_norm", similarity=0.95, seed=4),  # same shape, other family
             "wide": kernel("6_Wide", "elementwise", shape=SHAPE + ",double", similarity=0.95, seed=5),
             "broken": kernel("8_Tanh", "elementwise", gate="correctness", similarity=0.95, seed=6),
             "own": kernel("9_LeakyReLU", "elementwise", similarity=0.99, seed=8),
             "template": template()}
    ids = bank.add(list(items.values()))
    return dict(zip(items, ids, strict=True))


def test_candidates_are_the_generic_example_the_template_and_same_family_same_shape_kernels(memory_config):
    bank = MemoryBank(memory_config(retrieval="similarity"))
    ids = fill(bank)
    choice = bank.retrieve(request()).slot
    kinds = {c.key: c.kind for c in choice.candidates}
    # One kernel per operator (its nearest), never another family's, another shape's, a failed one or the task's own.
    assert kinds == {"generic": "generic", ids["template"]: "template", ids["relu"]: "kernel", ids["sigmoid"]: "kernel"}
    assert choice.chosen == ids["relu"] and choice.kind == "kernel"  # similarity: the nearest kernel
    retrieval = bank.retrieve(request())
    assert retrieval.slot_item is not None and retrieval.slot_item.id == ids["relu"]
    bank.close()


def test_similarity_takes_the_template_without_a_kernel_and_none_the_generic_example(memory_config, tmp_path):
    bank = MemoryBank(memory_config(retrieval="similarity"))
    [template_id] = bank.add([template()])
    assert bank.retrieve(request()).slot.chosen == template_id
    bank.close()
    none = MemoryBank(memory_config(retrieval="none", uri=str(tmp_path / "none")))
    none.add([template(), template("kernel").model_copy(update={"tags": ["bundle", "core"]})])
    retrieval = none.retrieve(request())
    assert retrieval.slot.chosen == "generic" and retrieval.slot_item is None
    assert [i.name for i in retrieval.api_items] == ["kernel"]  # the static brief: core API items in every arm
    none.close()


def test_thompson_sampling_learns_which_candidate_helps_per_context():
    """Fresh drafts: the generic example succeeds 7 in 10, the family's kernels 1 in 10; retries:
    the kernels help. Value mode then mostly keeps the generic example for fresh drafts and shows
    a kernel on retries, and a kernel new to the slot starts from its family's pooled record."""
    stats = SlotStats()
    for context, generic, kernels in (("fresh", 7, 1), ("retry", 0, 3)):
        for success in range(10):
            stats.record(SlotOutcome(backend="cpu", family="elementwise", context=context, key="generic",
                                     kind="generic"), success < generic)
            stats.record(SlotOutcome(backend="cpu", family="elementwise", context=context, key="k1", kind="kernel"),
                         success < kernels)
    rng = np.random.default_rng(0)

    def picks(context: str) -> dict[str, int]:
        counts = {"generic": 0, "k1": 0, "k2": 0}
        for _ in range(400):
            candidates = [SlotCandidate(key="generic", kind="generic"), SlotCandidate(key="k1", kind="kernel"),
                          SlotCandidate(key="k2", kind="kernel")]  # k2: new to the slot
            slot = SlotRequest(task_id="t", family="elementwise", shape="", context=context)
            counts[decide("value", "cpu", slot, candidates, stats, (1.0, 1.0), 4.0, rng).chosen] += 1
        return counts

    fresh, retry = picks("fresh"), picks("retry")
    assert fresh["generic"] > 0.85 * 400 and fresh["k2"] < 0.1 * 400, fresh  # k2 inherits the kernels' record
    assert retry["generic"] < 0.1 * 400, retry
    candidates = [SlotCandidate(key="generic", kind="generic"), SlotCandidate(key="k1", kind="kernel")]
    decide("value", "cpu", SlotRequest(task_id="t", family="elementwise", context="fresh"), candidates, stats,
           (1.0, 1.0), 4.0, rng)
    assert candidates[0].successes == 7 and candidates[0].trials == 10
    assert abs(candidates[0].lift - (0.7 - 0.1)) < 1e-9 and abs(candidates[1].lift - (0.1 - 0.7)) < 1e-9


def test_slot_outcomes_are_credited_by_the_update_once_each(memory_config):
    config = memory_config(retrieval="value")
    bank = MemoryBank(config)
    ids = fill(bank)
    outcome = SlotOutcome(backend="cpu", family="elementwise", context="fresh", key=ids["relu"], kind="kernel")
    for reward in (1.0, -1.0, -1.0):
        bank.update(ValueUpdate(shown_ids=[ids["relu"]], stage="draft", reward=reward, slot=outcome))
    retried = ValueUpdate(shown_ids=[], stage="draft", reward=1.0, slot=outcome.model_copy(update={"key": "generic",
                                                                                                   "kind": "generic"}))
    bank.update(retried)
    bank.update(retried)  # a retried call counts once
    key = stat_key("cpu", "elementwise", "fresh", ids["relu"])
    expected = {key: [1, 3], stat_key("cpu", "elementwise", "fresh", "kernels"): [1, 3],
                stat_key("cpu", "elementwise", "fresh", "generic"): [1, 1],
                stat_key("cpu", "elementwise", "fresh", "all"): [2, 4]}
    assert bank.stats(disk=False).slots == expected
    bank.close()
    assert MemoryBank(config, read_only=True).stats(disk=False).slots == expected


def test_slot_counts_replay_from_the_log_and_from_a_fold(memory_config):
    config = memory_config(retrieval="value")
    bank = MemoryBank(config)
    ids = fill(bank)
    outcome = SlotOutcome(backend="cpu", family="elementwise", context="retry", key=ids["sigmoid"], kind="kernel")
    bank.update(ValueUpdate(shown_ids=[ids["sigmoid"]], stage="draft", reward=1.0, slot=outcome))
    bank.store.close()  # a crash after the update was durable: the lease goes, nothing is folded
    replayed = MemoryBank(config)
    key = stat_key("cpu", "elementwise", "retry", ids["sigmoid"])
    assert replayed.stats(disk=False).slots[key] == [1, 1]
    replayed.update(ValueUpdate(shown_ids=[], stage="draft", reward=-1.0, slot=outcome))
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
    outcome = SlotOutcome(backend="cpu", family="elementwise", context="fresh", key=ids["relu"], kind="kernel")
    ack = ray.get(actor.update.remote(ValueUpdate(shown_ids=[ids["relu"]], stage="draft", reward=-1.0, slot=outcome)))
    assert ack.durable
    stats = ray.get(actor.stats.remote(False))
    assert stats.slots[stat_key("cpu", "elementwise", "fresh", ids["relu"])] == [0, 1]
    ray.kill(actor)
