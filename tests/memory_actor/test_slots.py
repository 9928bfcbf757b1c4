"""The one decision beyond the brief (memory_actor/slots.py): its options and candidates, the
modes' choices, ranked items only where the option asks for them, bare's cold prior, and its
statistics in the bank (credited by the draft's update, durable, replayed after a restart,
served by the Ray actor)."""

from __future__ import annotations

import numpy as np
import pytest
import ray

from memory_actor.actor import MemoryActor
from memory_actor.bank import MemoryBank
from memory_actor.config import MemoryConfig
from memory_actor.items import ItemVerdict, MemoryItem
from memory_actor.messages import RetrievalRequest, ValueUpdate
from memory_actor.seeding import bundle_items
from memory_actor.slot_values import shipped_cold_rate
from memory_actor.slots import (
    SlotCandidate,
    SlotChoice,
    SlotOutcome,
    SlotRequest,
    SlotStats,
    decide,
    stat_key,
)
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


def four_candidates() -> list[SlotCandidate]:
    return [SlotCandidate(key="generic", kind="generic"), SlotCandidate(key="ex", kind="example"),
            SlotCandidate(key="k1", kind="kernel"), SlotCandidate(key="k2", kind="kernel")]  # k2: new to the slot


def picks(stats: SlotStats, context: str, config: MemoryConfig, draws: int = 400) -> dict[str, int]:
    rng = np.random.default_rng(0)
    counts: dict[str, int] = {}
    for _ in range(draws):
        candidates = four_candidates()
        slot = SlotRequest(task_id="t", family="elementwise", shape="", context=context)
        choice = decide("value", "cpu", slot, candidates, stats, config, rng)
        key = f"{choice.chosen}{'+ranked' if choice.ranked else ''}"
        counts[key] = counts.get(key, 0) + 1
    return counts


def test_thompson_sampling_learns_which_option_helps_per_context():
    """Fresh drafts: bare succeeds 7 in 10, the family's kernels 1 in 10, with ranked items 0 in
    10; retries: a kernel alone helps (3 of 10 against bare's 0 of 10). Value mode then mostly
    sends fresh drafts bare and shows a kernel (without the ranked items) on most retries; a
    kernel new to the slot starts from its family's pooled record."""
    stats = SlotStats()
    for context, bare, kernels in (("fresh", 7, 1), ("retry", 0, 3)):
        for success in range(10):
            stats.record(outcome("generic", "generic", context), success < bare)
            stats.record(outcome("k1", "kernel", context), success < kernels)
            stats.record(outcome("k1", "kernel", context, ranked=True), False)
            stats.record(outcome("ex", "example", context), False)
            stats.record(outcome("ex", "example", context, ranked=True), False)
    config = MemoryConfig(cold_drafts=0, shipped_rates=False)
    fresh, retry = picks(stats, "fresh", config), picks(stats, "retry", config)
    assert fresh.get("generic", 0) > 0.9 * 400 and fresh.get("k2", 0) < 0.05 * 400, fresh
    assert "generic+ranked" not in fresh  # ranked items come only with a family example or kernel
    assert retry.get("generic", 0) < 0.2 * 400 and retry.get("k1", 0) + retry.get("k2", 0) > 0.6 * 400, retry
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
    retry_greedy = decide("value", "cpu", SlotRequest(task_id="t", family="elementwise", context="retry"), candidates,
                          stats, config.model_copy(update={"slot_greedy": True}), np.random.default_rng(0))
    assert retry_greedy.kind == "kernel" and not retry_greedy.ranked  # 3 of 10 against 0 of 10: evidence enough


def test_an_untried_option_starts_at_bares_posterior_and_ties_go_to_bare():
    """Issue 54.1: whatever bare's cold rate (a family the model knows, or one it never solves),
    every memory option nobody tried has bare's posterior mean; a frozen bank then stays bare, and
    Thompson sampling tries memory about as often as bare (it has no evidence either way)."""
    for cold in ((6, 10), (0, 36)):
        config = MemoryConfig(cold_rates={"cpu/elementwise": cold}, slot_greedy=True)
        choice = decide("value", "cpu", SlotRequest(task_id="t", family="elementwise"), four_candidates(), SlotStats(),
                        config, np.random.default_rng(0))
        bare, *memory = choice.options
        assert [o.key for o in memory] == ["example", "example+ranked", "kernels", "kernels+ranked"]
        assert all(abs(o.mean - bare.mean) < 1e-9 for o in memory), choice.options
        assert (choice.option, choice.reason) == ("bare", "greedy")
        sampled = picks(SlotStats(), "fresh", config.model_copy(update={"slot_greedy": False}))
        assert 0.35 * 400 < sampled.get("generic", 0) < 0.65 * 400, sampled


def test_bares_prior_is_the_operators_own_cold_rate_where_known_the_familys_otherwise():
    """v4's row reductions: the pool solved 6 of 90 cold drafts, the held-out operators about half
    of theirs. An operator's own screening record leads bare's prior; one without it takes the
    family's; the run's own fresh bare drafts of an operator count as its record too (and only
    once: they are the family's bare drafts as well)."""
    config = MemoryConfig(cold_rates={"cpu/row_reduction": (6, 90), "cpu/row_reduction/47_Sum": (3, 6)})

    def bare_mean(task: str, stats: SlotStats) -> float:
        choice = decide("value", "cpu", SlotRequest(task_id=task, family="row_reduction"), four_candidates(), stats,
                        config, np.random.default_rng(0))
        return choice.options[0].mean

    assert bare_mean("47_Sum", SlotStats()) > 0.4 and bare_mean("48_Mean", SlotStats()) < 0.16
    stats = SlotStats()
    for success in (True, True, True, False):
        stats.record(SlotOutcome(backend="cpu", family="row_reduction", context="fresh", key="generic",
                                 kind="generic", task_id="48_Mean"), success)
    assert stats.get(stat_key("cpu", "row_reduction", "fresh", "bare@48_Mean")) == (3, 4)
    choice = decide("value", "cpu", SlotRequest(task_id="48_Mean", family="row_reduction"), four_candidates(), stats,
                    config, np.random.default_rng(0))
    family_mean = (1 + 6 * 8 / 90) / 10  # the family's cold record over the slot prior, as 8 drafts
    assert choice.options[0].posterior == pytest.approx((2 * family_mean + 3, 2 * (1 - family_mean) + 1))
    retry = decide("value", "cpu", SlotRequest(task_id="47_Sum", family="row_reduction", context="retry"),
                   four_candidates(), SlotStats(), config, np.random.default_rng(0))
    assert retry.options[0].posterior == (1.0, 1.0)  # a cold rate says nothing about a retry


def test_memory_displaces_bare_in_a_frozen_bank_only_within_the_expected_loss():
    """Greedy (a frozen bank): memory only where its posterior mean is above bare's and what it
    costs in expectation is within slot_max_loss. Where the model never solves a family (bare 0 of
    36 and 0 of 3), one success of an option moves it; where bare is right half the time, two
    successes in two do not, nine in ten do."""
    def frozen(cold: tuple[int, int], own: tuple[int, int], successes: int, drafts: int) -> SlotChoice:
        config = MemoryConfig(cold_rates={"cpu/elementwise": cold, "cpu/elementwise/t": own}, slot_greedy=True)
        stats = SlotStats()
        for n in range(drafts):
            stats.record(outcome("ex", "example"), n < successes)
        return decide("value", "cpu", SlotRequest(task_id="t", family="elementwise"), four_candidates(), stats,
                      config, np.random.default_rng(0))

    assert frozen((0, 36), (0, 3), 0, 2).option == "bare"
    shown = frozen((0, 36), (0, 3), 1, 1)
    assert (shown.option, shown.chosen) == ("example", "ex")
    assert shown.options[1].loss <= 0.02 < shown.options[0].mean  # what it may cost is less than bare's rate
    assert frozen((41, 132), (4, 6), 2, 2).option == "bare"
    assert frozen((41, 132), (4, 6), 9, 10).option == "example"


def test_retry_evidence_does_not_move_fresh_drafts():
    """The same content lifts retries and sinks fresh drafts where the model knows the family
    (fitted_agent.py: a same-family kernel 2 of 8 retries against the generic example's 3 of 183,
    half bare's rate on fresh drafts), so an option's retry record is not evidence for fresh drafts."""
    stats = SlotStats()
    for n in range(10):
        stats.record(outcome("ex", "example", "retry"), n < 8)
        stats.record(outcome("generic", "generic", "retry"), False)
    config = MemoryConfig(cold_rates={"cpu/elementwise": (6, 10)}, slot_greedy=True)
    fresh = decide("value", "cpu", SlotRequest(task_id="t", family="elementwise"), four_candidates(), stats, config,
                   np.random.default_rng(0))
    retry = decide("value", "cpu", SlotRequest(task_id="t", family="elementwise", context="retry"), four_candidates(),
                   stats, config, np.random.default_rng(0))
    assert fresh.option == "bare" and all(o.trials == 0 for o in fresh.options)
    assert retry.option == "example"


def test_a_family_without_any_cold_record_measures_it_first():
    """No screening and nothing shipped for the backend (cuda): the family's first fresh drafts are
    bare until they have measured its cold rate; retries are not held back."""
    config = MemoryConfig(cold_drafts=2)
    stats = SlotStats()

    def sampled(context: str, draws: int) -> dict[str, int]:
        rng, counts = np.random.default_rng(0), {}
        for _ in range(draws):
            choice = decide("value", "cuda", SlotRequest(task_id="t", family="elementwise", context=context),
                            four_candidates(), stats, config, rng)
            counts[choice.reason] = counts.get(choice.reason, 0) + 1
        return counts

    assert sampled("fresh", 20) == {"cold": 20}
    for success in (False, False):
        stats.record(SlotOutcome(backend="cuda", family="elementwise", context="fresh", key="generic",
                                 kind="generic"), success)
    assert sampled("fresh", 20) == {"thompson": 20}
    assert sampled("retry", 20) == {"thompson": 20}


def test_a_fresh_bank_takes_the_default_models_shipped_cold_rate():
    """A user's run has no screening: bare starts from the cold rate the bundle ships
    (bundles/measured_rates.yaml, derived by bench/measured_rates.py), on the twin and on a device (the
    twin's language); `shipped_rates: false` (a benchmark) leaves it out."""
    shipped = shipped_cold_rate("npu-twin", "elementwise")
    assert shipped is not None and shipped[0] == 0 and shipped[1] >= 30
    assert shipped_cold_rate("npu", "elementwise") == shipped and shipped_cold_rate("cuda", "elementwise") is None
    for backend in ("npu-twin", "npu"):
        choice = decide("value", backend, SlotRequest(task_id="4_ReLU", family="elementwise"), four_candidates(),
                        SlotStats(), MemoryConfig(), np.random.default_rng(0))
        assert choice.reason == "thompson"  # no first draft spent measuring a rate of zero
        assert choice.options[0].prior == pytest.approx((1, 1 + 8))
    off = decide("value", "npu-twin", SlotRequest(task_id="4_ReLU", family="elementwise"), four_candidates(),
                 SlotStats(), MemoryConfig(shipped_rates=False), np.random.default_rng(0))
    assert off.reason == "cold" and all(o.prior == off.options[1].prior for o in off.options[1:])


def test_a_fresh_bank_starts_an_option_from_the_default_models_published_drafts_of_it():
    """The shipped file also holds the evaluations' drafts that showed an option (v4 on the twin:
    the scan example 4 of 32, the elementwise example 0 of 32): on a fresh bank they are the
    option's first evidence, so the scan example starts above bare and the elementwise one below,
    while an option never published (kernels) starts at bare's."""
    def options(family: str, config: MemoryConfig) -> dict[str, float]:
        choice = decide("value", "npu-twin", SlotRequest(task_id="t", family=family), four_candidates(), SlotStats(),
                        config, np.random.default_rng(0))
        return {o.key: o.mean for o in choice.options}

    scan, elementwise = options("scan", MemoryConfig()), options("elementwise", MemoryConfig())
    assert scan["example"] > scan["bare"] and elementwise["example"] < elementwise["bare"]
    assert scan["kernels"] == pytest.approx(scan["bare"]) and elementwise["kernels"] == pytest.approx(elementwise["bare"])
    benchmark = options("scan", MemoryConfig(shipped_rates=False, cold_rates={"npu-twin/scan": (0, 18)}))
    assert benchmark["example"] == pytest.approx(benchmark["bare"])  # a benchmark measures its own


def test_an_example_declares_its_own_option():
    """An example candidate whose bundle entry names an option (a rung of the family's ladder)
    is an option of its own, with and without the ranked items, counted under its name."""
    candidates = [SlotCandidate(key="generic", kind="generic"), SlotCandidate(key="ex", kind="example"),
                  SlotCandidate(key="r1", kind="example", option="rung")]
    stats = SlotStats()
    for _ in range(3):
        stats.record(SlotOutcome(backend="npu-twin", family="elementwise", context="fresh", key="r1", kind="example",
                                 option="rung"), True)
        stats.record(SlotOutcome(backend="npu-twin", family="elementwise", context="fresh", key="ex", kind="example"),
                     False)
    assert stats.get(stat_key("npu-twin", "elementwise", "fresh", "rung")) == (3, 3)
    choice = decide("value", "npu-twin", SlotRequest(task_id="t", family="elementwise"), candidates, stats,
                    MemoryConfig(slot_greedy=True), np.random.default_rng(0))
    assert [o.key for o in choice.options] == ["bare", "example", "example+ranked", "rung", "rung+ranked"]
    assert (choice.chosen, choice.option) == ("r1", "rung")


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
    (below bare) and the first rung from the twin pilot's 4 of 8 (well above bare)."""
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
    # bare's prior plus 4 of 8: mean 0.28 against 0.10, better than bare in about 9 of 10 draws
    assert options["rung"].prior == pytest.approx((5, 13)) and options["rung"].better > 0.85
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
