"""The stop rules (actors/stops.py) on operators' records: the attempts an episode records and the
memory's real draft decisions (memory_actor.slots.SlotChoice)."""

from __future__ import annotations

from actors.config import EpisodeConfig
from actors.messages import Attempt, ShownItem
from actors.stops import (
    NO_COMPILE,
    PLATEAU,
    DraftOffers,
    EpisodeStops,
    plateau,
    refinement_gains,
    uncompiled_drafts,
)
from memory_actor.messages import Retrieval
from memory_actor.slots import OptionValue, SlotCandidate, SlotChoice


def attempt(iteration: int, stage: str, gate: str, latency_ms: float | None = None) -> Attempt:
    return Attempt(run_id="r", task="4_ReLU", iteration=iteration, stage=stage, gate=gate,
                   feasible=gate == "ok", latency_ms=latency_ms)


def record(*steps: tuple[str, str, float | None]) -> list[Attempt]:
    return [attempt(i, stage, gate, ms) for i, (stage, gate, ms) in enumerate(steps, start=1)]


def test_a_refinement_gains_over_the_best_before_it():
    attempts = record(("draft", "ok", 10.0), ("refine", "ok", 5.0), ("refine", "correctness", None),
                      ("refine", "ok", 6.0), ("refine", "llm", None), ("refine", "ok", 4.0))
    assert refinement_gains(attempts) == [1.0, None, 5.0 / 6.0 - 1, 0.25]  # the llm attempt is no verdict


def test_plateau_stops_after_k_refinements_without_a_gain_above_the_threshold():
    base = [("draft", "ok", 10.0), ("refine", "ok", 5.0)]  # a 2x gain
    flat = [("refine", "ok", 4.8), ("refine", "compile", None), ("refine", "ok", 4.7)]  # +4%, failed, +2%
    assert plateau(record(*base, *flat[:2]), k=3, threshold=0.10) is None  # only two since the gain
    stop = plateau(record(*base, *flat), k=3, threshold=0.10)
    assert stop is not None and stop.rule == PLATEAU
    assert stop.detail == "the last 3 refinements gained no more than 10% over the best kernel (best gain +4.2%)"
    # A gain above the threshold among the last K holds it off; K 0 is off.
    assert plateau(record(*base, *flat[:2], ("refine", "ok", 4.0)), k=3, threshold=0.10) is None
    assert plateau(record(*base, *flat), k=0, threshold=0.10) is None
    # Refinements the model did not answer do not count.
    assert plateau(record(*base, *flat[:2], ("refine", "llm", None)), k=3, threshold=0.10) is None


def test_uncompiled_drafts_count_until_one_compiles():
    assert uncompiled_drafts(record(("draft", "compile", None), ("draft", "no_code", None),
                                    ("draft", "llm", None), ("draft", "repeat", None))) == 3
    assert uncompiled_drafts(record(("draft", "compile", None), ("draft", "correctness", None),
                                    ("draft", "compile", None))) is None


def slot_choice(offered: list[str], chosen: str = "generic", kind: str = "generic", option: str = "bare",
                mean: float = 0.3) -> SlotChoice:
    candidates = [SlotCandidate(key="generic", kind="generic")]
    candidates += [SlotCandidate(key=key, kind="example", option="rung") for key in offered]
    return SlotChoice(family="elementwise", context="retry", chosen=chosen, kind=kind, option=option,
                      options=[OptionValue(key="bare", mean=0.1), OptionValue(key="rung", mean=mean)],
                      candidates=candidates)


def draft_retrieval(slot: SlotChoice) -> Retrieval:
    return Retrieval(retrieval_id="x", stage="draft", mode="value", slot=slot)


class Outcome:
    """What EpisodeStops.observe reads of an iteration (actors.episode_outcome.IterationOutcome)."""

    def __init__(self, retrieval: Retrieval, shown: list[ShownItem], gate: str = "compile", stage: str = "draft"):
        self.stage, self.retrieval, self.shown, self.gate = stage, retrieval, shown, gate


def test_no_compile_stops_after_n_drafts_unless_the_memory_offers_something_new():
    stops = EpisodeStops.of(EpisodeConfig(uncompiled_drafts=2))
    api = ShownItem(id="api-1", kind="api", role="api")
    bare = draft_retrieval(slot_choice(["rung-relu"]))  # the memory offers the rung; the decision chose bare
    drafts: list[Attempt] = []
    for i in (1, 2):
        assert stops.check(drafts, feasible=False) is None
        stops.observe(Outcome(bare, [api]))
        drafts.append(attempt(i, "draft", "compile"))
    assert stops.offers.memory_rate == 0.1  # the chosen option's posterior mean
    # Two drafts, none compiled, but the rung was never shown: one more draft is allowed for it...
    assert stops.offers.untried() == ["rung-relu"] and stops.check(drafts, feasible=False) is None
    stops.observe(Outcome(bare, [api]))  # ... which showed nothing new (the decision kept to bare)
    drafts.append(attempt(3, "draft", "compile"))
    stop = stops.check(drafts, feasible=False)
    assert stop is not None and stop.rule == NO_COMPILE
    assert stop.detail == "3 drafts, none compiled; the memory's other offers (1) were passed over"


def test_drafts_go_on_while_each_shows_content_not_shown_before():
    stops = EpisodeStops.of(EpisodeConfig(uncompiled_drafts=1))
    offered = ["rung-a", "rung-b"]
    first = draft_retrieval(slot_choice(offered))
    stops.observe(Outcome(first, []))
    drafts = [attempt(1, "draft", "no_code")]
    assert stops.check(drafts, feasible=False) is None  # untried: rung-a, rung-b
    stops.observe(Outcome(draft_retrieval(slot_choice(offered, chosen="rung-a", kind="example", option="rung")),
                          [ShownItem(id="rung-a", kind="api", role="pinned")]))
    drafts.append(attempt(2, "draft", "compile"))
    assert stops.offers.last_was_new and stops.check(drafts, feasible=False) is None  # rung-b still untried
    stops.observe(Outcome(draft_retrieval(slot_choice(offered, chosen="rung-b", kind="example", option="rung")),
                          [ShownItem(id="rung-b", kind="api", role="pinned")]))
    drafts.append(attempt(3, "draft", "compile"))
    stop = stops.check(drafts, feasible=False)
    assert stop is not None and stop.detail == "3 drafts, none compiled; the memory offers nothing it has not been shown"


def test_a_draft_that_compiled_or_a_feasible_kernel_turns_the_draft_rule_off():
    stops = EpisodeStops.of(EpisodeConfig(uncompiled_drafts=1, plateau_refinements=0))
    assert stops.check(record(("draft", "correctness", None), ("draft", "compile", None)), feasible=False) is None
    assert stops.check(record(("draft", "ok", 3.0)), feasible=True) is None  # plateau off (0)


def test_the_stops_state_survives_a_turn():
    offers = DraftOffers()
    offers.observe("draft", draft_retrieval(slot_choice(["rung-a"])), [])
    stops = EpisodeStops.of(EpisodeConfig())
    stops.offers, stops.past_limit = offers, 1
    again = EpisodeStops.of(EpisodeConfig())
    again.restore(stops.state())
    assert again.offers == offers and again.past_limit == 1
