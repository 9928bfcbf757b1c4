"""What each option of the one decision beyond the brief is worth and which one is chosen, without
a bank (memory_actor/slot_values.py, slots.decide): Thompson sampling per context, an untried
option at bare's posterior, bare's cold prior (the operator's own, the family's, the shipped
one), the frozen bank's expected-loss rule, and options declared by examples."""

from __future__ import annotations

import numpy as np
import pytest

from memory_actor.config import MemoryConfig
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


def outcome(key: str, kind: str, context: str = "fresh", ranked: bool = False, option: str = "") -> SlotOutcome:
    return SlotOutcome(backend="cpu", family="elementwise", context=context, key=key, kind=kind, ranked=ranked,
                       option=option)


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
    # contexts learned apart (retry_borrow_strength 0): test_a_retry_borrows... shows the default
    config = MemoryConfig(cold_drafts=0, shipped_rates=False, retry_borrow_strength=0)
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


def test_a_retry_borrows_an_options_fresh_record_until_its_own_drafts_lead():
    """Issue 64: a retry's untried option starts from its fresh drafts' record (counted as at
    most retry_borrow_strength drafts) instead of tying with bare: after a failed draft, the
    rung that lifts fresh drafts (6 of 8 against bare's 1 of 8) is what a frozen bank shows the
    retry; with the borrowing off, the retry goes bare; the retry's own failures take it back."""
    stats = SlotStats()
    for success in range(8):
        stats.record(outcome("generic", "generic", "fresh"), success < 1)
        stats.record(outcome("rung_x", "example", "fresh", option="rung"), success < 6)
    candidates = [SlotCandidate(key="generic", kind="generic"), SlotCandidate(key="rung_x", kind="example", option="rung")]
    request = SlotRequest(task_id="t", family="elementwise", context="retry")
    greedy = MemoryConfig(cold_drafts=0, shipped_rates=False, slot_greedy=True, slot_max_loss=0.5)
    rng = np.random.default_rng(0)
    assert decide("value", "cpu", request, candidates, stats, greedy, rng).option == "rung"
    alone = greedy.model_copy(update={"retry_borrow_strength": 0})
    assert decide("value", "cpu", request, candidates, stats, alone, rng).option == "bare"
    for _ in range(12):  # the retry's own record: the rung never recovers a retry here
        stats.record(outcome("rung_x", "example", "retry", option="rung"), False)
    assert decide("value", "cpu", request, candidates, stats, greedy, rng).option == "bare"
