"""The expected gain of an operator's next attempt, in operators added to the run's headline (feasible,
and faster than eager: fast_1), from its own record, the memory's values and the run's record:

- **drafting** (no feasible kernel yet): `p × (1 + q_fast)`. `p`, the chance the next draft is
  feasible: the published records' rate for the state of its drafts so far (`DRAFT_RATES`: a first
  draft 17%; after drafts of which some compiled 5.3%; after n drafts none of which compiled 3.5%,
  2.4%, 0.9%, 0.16%), scaled by the memory's own estimate once it has one: times sqrt(m / 17%),
  within [1/2, 2], m the posterior mean feasible rate of the option its last draft decision chose
  (memory_actor/slots.py), so a family the memory rates above the records' first drafts keeps more
  of its worth, one it rates below keeps less, and the state of its own drafts weighs most. A
  first draft's rate is this run's own first-draft rate (prior: the
  records' 17%, as ten drafts). `q_fast`:
  the share of this run's feasible operators that are faster than eager (prior 1/2).
- **refining** (feasible): `p_gain × v`. `p_gain`, the chance the next refinement gains more than
  `episode.plateau_gain`: the records' 13% right after a gain (or the first refinement) and 3.8%
  after refinements that did not gain, each pooled with this run's own refinements. `v`: for a
  kernel slower than eager, the share of the records' gains large enough to cross eager
  (`1/speedup - 1`); for one already faster, `FAST_WEIGHT` (a faster kernel of an operator already
  counted is worth a tenth of a new one: a policy, not a measurement).

An operator with no attempt yet is worth a first draft. Ties go to the planned order.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field

from actors.episode_turns import EpisodeState
from actors.messages import EpisodeResult
from actors.stops import COMPILED_GATES, judged, refinement_gains

# bench/budget_defaults.py on the published records (4,694 attempts; see docs/agent.md "Stops"):
# the chance that the next draft is feasible by the state of the operator's drafts so far.
DRAFT_RATES = {"first": 0.170, "compiled": 0.053, "uncompiled_1": 0.035, "uncompiled_2": 0.024,
               "uncompiled_3": 0.0089, "uncompiled_4": 0.0016}
# ... the chance that a refinement gains more than 10% over the best so far: right after a gain (or
# first), and after refinements that did not (7 of 53, 5 of 133)
REFINE_RATES = {"after_gain": 0.132, "after_none": 0.038}
# ... and the 12 recorded gains above 10% (best_before / latency - 1)
RECORDED_GAINS = sorted([0.212, 0.311, 0.315, 0.447, 0.55, 0.759, 0.849, 3.019, 3.167, 3.185, 3.524, 5.54])
PRIOR_WEIGHT = 10.0  # the records' rates count as this many of the run's own attempts
MEMORY_SCALE = 2.0  # the memory's values move a draft's worth by at most this factor either way
FAST_WEIGHT = 0.1


@dataclass(frozen=True)
class Gain:
    value: float
    why: str


class RunRates(BaseModel):
    """The run's own record, pooled over its operators (the records' rates are the prior)."""

    first_drafts: int = 0
    first_feasible: int = 0
    refinements: dict[str, list[int]] = Field(default_factory=lambda: {"after_gain": [0, 0], "after_none": [0, 0]})
    feasible_ops: int = 0
    fast_ops: int = 0

    def first_rate(self) -> float:
        return (self.first_feasible + PRIOR_WEIGHT * DRAFT_RATES["first"]) / (self.first_drafts + PRIOR_WEIGHT)

    def refine_rate(self, key: str) -> float:
        n, gained = self.refinements[key]
        return (gained + PRIOR_WEIGHT * REFINE_RATES[key]) / (n + PRIOR_WEIGHT)

    def q_fast(self) -> float:
        return (self.fast_ops + 1) / (self.feasible_ops + 2)

    @classmethod
    def of(cls, records: Iterable[tuple[list[Any], EpisodeResult]], threshold: float) -> RunRates:
        rates = cls()
        for attempts, result in records:
            drafts = judged(attempts, "draft")
            if drafts:
                rates.first_drafts += 1
                rates.first_feasible += bool(drafts[0].feasible)
            since_gain = 0
            for g in refinement_gains(attempts):
                gained = g is not None and g > threshold
                counts = rates.refinements["after_gain" if since_gain == 0 else "after_none"]
                counts[0] += 1
                counts[1] += gained
                since_gain = 0 if gained else since_gain + 1
            if result.feasible:
                rates.feasible_ops += 1
                rates.fast_ops += bool(result.speedup_vs_eager and result.speedup_vs_eager > 1)
        return rates


def draft_state(attempts: list[Any]) -> str:
    drafts = judged(attempts, "draft")
    if not drafts:
        return "first"
    if any(a.gate in COMPILED_GATES for a in drafts):
        return "compiled"
    return f"uncompiled_{min(len(drafts), 4)}"


def memory_factor(memory_rate: float) -> float:
    """sqrt(m / the records' first-draft rate), within [1/MEMORY_SCALE, MEMORY_SCALE]."""
    return min(MEMORY_SCALE, max(1 / MEMORY_SCALE, (memory_rate / DRAFT_RATES["first"]) ** 0.5))


def crossing_share(speedup: float) -> float:
    """The share of the recorded gains that would take a kernel at SPEEDUP past eager (smoothed)."""
    needed = 1.0 / speedup - 1.0
    above = len(RECORDED_GAINS) - bisect.bisect_right(RECORDED_GAINS, needed)
    return (above + 0.5) / (len(RECORDED_GAINS) + 1)


def expected_gain(attempts: list[Any], result: EpisodeResult, memory_rate: float | None, rates: RunRates,
                  threshold: float) -> Gain:
    """The expected gain of the operator's next attempt (the module's docstring says how)."""
    if not result.feasible:
        state = draft_state(attempts)
        own = rates.first_rate() if state == "first" else DRAFT_RATES[state]
        # The records' rate for the state of its drafts, scaled by how the memory rates the family's
        # next draft against the records' first-draft rate (a family the model does well keeps more),
        # within a factor of MEMORY_SCALE either way: the state of its own drafts weighs most.
        p = own if memory_rate is None else min(1.0, own * memory_factor(memory_rate))
        memory = "" if memory_rate is None else f", the memory rates its family's next draft {memory_rate:.1%}"
        value = 1 + rates.q_fast()
        what = "no attempt yet" if not attempts else state.replace("_", " ") + " draft(s)"
        return Gain(p * value, f"drafting ({what}): p(feasible) {p:.1%} (records {own:.1%}{memory})")
    gains = refinement_gains(attempts)
    since = next((i for i, g in enumerate(reversed(gains)) if g is not None and g > threshold), len(gains))
    key = "after_gain" if since == 0 else "after_none"
    p = rates.refine_rate(key)
    speedup = result.speedup_vs_eager
    if speedup is not None and speedup >= 1:
        value, what = FAST_WEIGHT, f"{speedup:.2f}x eager already"
    else:
        value = crossing_share(speedup) if speedup else 0.5
        what = f"{speedup:.2f}x eager, p(crossing) {value:.0%}" if speedup else "no eager time"
    return Gain(p * value, f"refining ({since} refinement(s) since a gain): p(gain) {p:.1%}, {what}")


def episode_gain(episode: Any, rates: RunRates) -> Gain:
    return expected_gain(episode.attempts, episode.result, episode.stops.offers.memory_rate, rates,
                         episode.config.plateau_gain)


def state_gain(state: EpisodeState | None, rates: RunRates, threshold: float) -> Gain:
    if state is None:
        return expected_gain([], EpisodeResult(task=""), None, rates, threshold)
    return expected_gain(state.attempts, state.result, state.stops.get("memory_rate"), rates, threshold)
