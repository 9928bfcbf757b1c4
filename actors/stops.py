"""Stops that save an operator's attempts (issue 67): refining stops on a plateau, drafting stops
after drafts that never compiled, unless the memory offers content the operator has not been shown.

Both rules read the operator's own record (its attempts, in order) and nothing else, so the same
record gives the same decision in either campaign and after a turn is resumed
(actors/episode_turns.py). Attempts the model did not answer (gate `llm`, `infra`) count for
neither rule. The defaults are measured on the published run records (bench/budget_defaults.py,
docs/agent.md "Stops").

- **plateau**: refining stops once the last `episode.plateau_refinements` refinements (K) each
  gained no more than `episode.plateau_gain` over the best latency before it (a refinement that
  failed gained nothing). The gain of a refinement is `best_before / latency - 1`.
- **no_compile**: drafting stops once `episode.uncompiled_drafts` drafts (N) were made and none
  compiled (gate compile, no_code, hack or repeat: the candidate never reached a run). A draft
  past N is made only while the memory's last decision for this operator listed content its
  drafts have not shown yet (a family example, a rung, a banked kernel of its family and shape:
  memory_actor.slots' candidates) and, past the first such draft, while the draft before it did
  show something new: content the memory offers but keeps not choosing does not hold the stop off.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

PLATEAU = "plateau"
NO_COMPILE = "no_compile"
STOP_RULES = (PLATEAU, NO_COMPILE)  # EpisodeResult.stopped_by of an operator a rule stopped: it ran to its end
COMPILED_GATES = frozenset({"correctness", "runtime", "ok", "review"})  # the candidate compiled and ran
NOT_THE_MODELS = frozenset({"llm", "infra"})  # no verdict on the model: neither rule counts them


@dataclass(frozen=True)
class Stop:
    """A rule that ended the operator, with one line saying why."""

    rule: str
    detail: str


def judged(attempts: Iterable[Any], stage: str) -> list[Any]:
    """The attempts of STAGE that carry a verdict on the model's candidate."""
    return [a for a in attempts if a.stage == stage and a.gate not in NOT_THE_MODELS]


def refinement_gains(attempts: Iterable[Any]) -> list[float | None]:
    """Each judged refinement's gain over the best latency before it (None: it was not feasible)."""
    best: float | None = None
    gains: list[float | None] = []
    for a in attempts:
        latency = a.latency_ms if a.feasible and a.latency_ms else None
        if a.stage == "refine" and a.gate not in NOT_THE_MODELS:
            gains.append(best / latency - 1.0 if latency is not None and best is not None else None)
        if latency is not None:
            best = latency if best is None else min(best, latency)
    return gains


def plateau(attempts: list[Any], k: int, threshold: float) -> Stop | None:
    """The plateau rule: the last K refinements gained no more than THRESHOLD each (K 0: off)."""
    if k <= 0:
        return None
    last = refinement_gains(attempts)[-k:]
    if len(last) < k or any(g is not None and g > threshold for g in last):
        return None
    best = max((g for g in last if g is not None), default=None)
    what = f"best gain {best:+.1%}" if best is not None else "none feasible"
    return Stop(PLATEAU, f"the last {k} refinements gained no more than {threshold:.0%} over the best kernel ({what})")


def uncompiled_drafts(attempts: list[Any]) -> int | None:
    """How many judged drafts the operator made when none of them compiled; None once one did."""
    drafts = judged(attempts, "draft")
    return None if any(a.gate in COMPILED_GATES for a in drafts) else len(drafts)


@dataclass
class DraftOffers:
    """What the memory offered an operator's drafts and what their prompts showed of it: the slot's
    candidates of the last draft decision (memory_actor.slots.SlotChoice.candidates), the content
    keys every draft showed (the slot's choice and the items shown, API items apart: those are the
    static brief), and whether the last draft showed a key no draft before it had shown."""

    offered: list[str] = field(default_factory=list)
    shown: list[str] = field(default_factory=list)
    last_was_new: bool = False
    memory_rate: float | None = None  # the memory's posterior mean feasible rate of the option it chose last


    def observe(self, stage: str, retrieval: Any, shown: Iterable[Any]) -> None:
        if stage != "draft":
            return
        slot = getattr(retrieval, "slot", None)
        keys = {item.id for item in shown if item.role != "api"}
        if slot is not None:
            self.offered = [c.key for c in slot.candidates if c.kind != "generic"]
            chosen = [o.mean for o in slot.options if o.key == slot.option] or [o.mean for o in slot.options]
            self.memory_rate = max(chosen) if chosen else None
            if slot.kind != "generic":
                keys.add(slot.chosen)
        new = keys - set(self.shown)
        self.last_was_new = bool(new)
        self.shown.extend(sorted(new))

    def untried(self) -> list[str]:
        shown = set(self.shown)
        return [key for key in self.offered if key not in shown]


@dataclass
class EpisodeStops:
    """The two rules for one operator, with what its drafts were offered and shown."""

    plateau_refinements: int
    plateau_gain: float
    uncompiled_limit: int
    offers: DraftOffers = field(default_factory=DraftOffers)
    past_limit: int = 0  # drafts made past the no-compile limit because the memory offered something new

    @classmethod
    def of(cls, config: Any) -> EpisodeStops:
        return cls(config.plateau_refinements, config.plateau_gain, config.uncompiled_drafts)

    def observe(self, outcome: Any) -> None:
        """One finished iteration (actors.episode_outcome.IterationOutcome)."""
        if outcome.gate in NOT_THE_MODELS:
            return
        self.offers.observe(outcome.stage, outcome.retrieval, outcome.shown)

    def check(self, attempts: list[Any], feasible: bool) -> Stop | None:
        """The rule that ends the operator before its next attempt, or None."""
        if feasible:
            return plateau(attempts, self.plateau_refinements, self.plateau_gain)
        n = uncompiled_drafts(attempts)
        if self.uncompiled_limit <= 0 or n is None or n < self.uncompiled_limit:
            return None
        untried = self.offers.untried()
        if untried and (self.past_limit == 0 or self.offers.last_was_new):
            self.past_limit += 1
            return None
        offered = (f"the memory's other offers ({len(untried)}) were passed over" if untried
                   else "the memory offers nothing it has not been shown")
        return Stop(NO_COMPILE, f"{n} drafts, none compiled; {offered}")

    def state(self) -> dict[str, Any]:
        return {"offered": list(self.offers.offered), "shown": list(self.offers.shown),
                "last_was_new": self.offers.last_was_new, "memory_rate": self.offers.memory_rate,
                "past_limit": self.past_limit}

    def restore(self, state: dict[str, Any]) -> None:
        self.offers = DraftOffers(list(state.get("offered", [])), list(state.get("shown", [])),
                                  bool(state.get("last_was_new", False)), state.get("memory_rate"))
        self.past_limit = int(state.get("past_limit", 0))
