"""The one decision a draft's prompt takes beyond the static brief, learned from earlier drafts.

Options (issue 41): `bare` (the brief and the generic worked example, nothing else); the
family's first rung in the slot (`rung`, issue 54: the simplest correct kernel of the family's
example task); the family's idiomatic worked example in the slot (`example`); a banked feasible
kernel of the task's own family and signature shape in the slot (`kernels`, then which kernel);
each of the last three alone or with the ranked items (`+ranked`). Ranked items come only with
an option that asks for them, so nothing reaches a prompt around the decision. Each option's value is a Beta posterior
of the success rate of the drafts that showed it, per backend, family and draft context (a fresh
first draft or a retry after a failed one: they succeed at very different rates).

Value mode samples the posteriors and takes the best (Thompson sampling: no tuning constant;
concurrent episodes that see the same counts before their outcomes arrive still spread over
the close options instead of all taking one upper bound), in steps: bare against memory (its
option of the highest posterior mean), then which memory option, then which kernel. Bare's prior on a
fresh draft is the family's cold rate: from screening (`memory.cold_rates`), or else the run's
own first fresh drafts of the family, which are bare until `cold_drafts` of them have measured
it; so memory is shown where its evidence beats the cold rate. A memory option new to a family
starts from the family's pooled memory record, and a kernel new to the slot from the pooled
kernel record, each shrunk to a few drafts. Similarity mode shows the nearest kernel, else the
example, with the ranked items; none shows nothing.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from memory_actor.config import MemoryConfig
from memory_actor.items import MemoryItem

SlotKind = Literal["generic", "rung", "example", "kernel"]
SlotContext = Literal["fresh", "retry"]
GENERIC = "generic"
BARE = "bare"  # the generic example and nothing else
KERNELS = "kernels"  # the pooled outcomes of every kernel of a family and context
ALL = "all"  # every draft of a family and context: the "did not show it" side of a candidate's lift
RANKED = "+ranked"
_CLASS = {"generic": "generic", "rung": "rung", "example": "example", "kernel": KERNELS}
# The memory options, each alone or with the ranked items: the family's ladder (its first rung,
# then its idiomatic example: one bundle item each), then the banked kernels. A new rung is one
# more entry here, in SlotKind and _CLASS, and a candidate the bank lists.
LADDER_KINDS = ("rung", "example")
MEMORY_KINDS = (*LADDER_KINDS, "kernel")


def option_key(kind: str, ranked: bool) -> str:
    """The statistic key of an option: bare, generic+ranked, rung[+ranked], example[+ranked], kernels[+ranked]."""
    if kind == "generic" and not ranked:
        return BARE
    return _CLASS[kind] + (RANKED if ranked else "")


class SlotRequest(BaseModel):
    """What the memory needs to list a draft's options."""

    model_config = ConfigDict(extra="forbid")

    task_id: str = Field(..., description="the task drafted: its own kernels are not candidates")
    family: str = Field(..., description="the task's dominant operator family (actors/families.py)")
    shape: str = Field("", description="the kernel signature's shape (actors/signature_shape.py)")
    context: SlotContext = Field("fresh", description="fresh: no earlier attempt shown; retry: after a failed one")
    example: str | None = Field(None, description="the api item name of the family's verified worked example")
    rung: str | None = Field(None, description="the api item name of the family's first rung (the simplest correct kernel)")
    start: Literal["rung"] | None = Field(None, description="show this option whatever the values say (the learning "
                                          "pass's first draft of an operator: episode.start_from_rung); its outcome "
                                          "counts for the option like any draft's")


class SlotCandidate(BaseModel):
    """What can fill the slot: the generic example, the family's first rung or example, or a banked kernel."""

    model_config = ConfigDict(extra="forbid")

    key: str = Field(..., description="'generic', or the example's or kernel's item id")
    kind: SlotKind
    similarity: float | None = None
    successes: int = 0
    trials: int = 0
    mean: float = Field(0.5, description="posterior mean of its success rate")
    lift: float | None = Field(None, description="success rate when shown minus the rate of the family's other "
                               "drafts in this context (None until both sides have drafts)")


class OptionValue(BaseModel):
    """One option's record and posterior, as the decision saw it."""

    model_config = ConfigDict(extra="forbid")

    key: str
    successes: int = 0
    trials: int = 0
    mean: float = 0.5
    prior: tuple[float, float] = (1.0, 1.0)


class SlotChoice(BaseModel):
    """The memory's decision for one draft, and the options and candidates it chose among."""

    model_config = ConfigDict(extra="forbid")

    family: str
    context: SlotContext
    chosen: str = GENERIC
    kind: SlotKind = "generic"
    ranked: bool = Field(False, description="the ranked items go with the slot (recalled only then)")
    option: str = BARE
    reason: str = Field("", description="why: thompson, greedy (a frozen bank), cold (measuring the family's cold rate), "
                                             "nearest, none, start (the draft starts from the rung: SlotRequest.start)")
    options: list[OptionValue] = Field(default_factory=list)
    candidates: list[SlotCandidate] = Field(default_factory=list)


class SlotOutcome(BaseModel):
    """What a draft's prompt actually showed (the budget may cut a kernel or every ranked item),
    sent back with the draft's value update: its verdict credits that option."""

    model_config = ConfigDict(extra="forbid")

    backend: str
    family: str
    context: SlotContext
    key: str
    kind: SlotKind
    ranked: bool = Field(False, description="at least one ranked item reached the prompt")


def slot_kernel_key(item: MemoryItem) -> tuple[str, str, str] | None:
    """(backend, family, signature shape) of a feasible kernel, from the tags the episode gives
    the traces it stores ('family:...', 'shape:...'); None for a trace without them."""
    tags = item.tag_values()
    if "family" not in tags:
        return None
    return item.backend, tags["family"], tags.get("shape", "")


def stat_key(backend: str, family: str, context: str, candidate: str) -> str:
    return f"{backend}/{family}/{context}/{candidate}"


class SlotStats:
    """Successes and trials per statistic key; the bank persists them (log rows, then meta)."""

    def __init__(self, state: dict[str, list[int]] | None = None):
        self.counts: dict[str, list[int]] = {key: [int(s), int(n)] for key, (s, n) in (state or {}).items()}

    def get(self, key: str) -> tuple[int, int]:
        successes, trials = self.counts.get(key, (0, 0))
        return successes, trials

    def set(self, key: str, successes: int, trials: int) -> None:
        self.counts[key] = [successes, trials]

    def record(self, outcome: SlotOutcome, success: bool) -> dict[str, list[int]]:
        """Count one draft for its option, its kernel and the family's total; returns the changed
        keys with their absolute counts (for the log)."""
        keys = [option_key(outcome.kind, outcome.ranked), ALL] + ([outcome.key] if outcome.kind == "kernel" else [])
        changed = {}
        for candidate in keys:
            key = stat_key(outcome.backend, outcome.family, outcome.context, candidate)
            successes, trials = self.get(key)
            self.set(key, successes + int(success), trials + 1)
            changed[key] = list(self.counts[key])
        return changed

    def state(self) -> dict[str, list[int]]:
        return {key: list(value) for key, value in self.counts.items()}


def _shrunk(prior: tuple[float, float], successes: float, trials: float, strength: float) -> tuple[float, float]:
    """`prior` plus a record counted as at most `strength` drafts."""
    weight = min(1.0, strength / trials) if trials else 0.0
    return prior[0] + weight * successes, prior[1] + weight * (trials - successes)


def _beta_mean(a: float, b: float) -> float:
    return a / (a + b)


def decide(mode: str, backend: str, request: SlotRequest, candidates: list[SlotCandidate], stats: SlotStats,
           config: MemoryConfig, rng: np.random.Generator) -> SlotChoice:
    """Fill in the statistics and choose an option; `candidates` lists the generic example first,
    then the family's first rung and example, then the kernels by similarity; `config` gives the priors
    (slot_prior, memory_prior, cold_rates...) and slot_greedy."""
    prior = tuple(config.slot_prior)

    def counts(candidate: str) -> tuple[int, int]:
        return stats.get(stat_key(backend, request.family, request.context, candidate))

    all_s, all_n = counts(ALL)
    pool_s, pool_n = (sum(pair) for pair in zip(counts(KERNELS), counts(KERNELS + RANKED), strict=True))
    kernel_prior = _shrunk(prior, pool_s, pool_n, config.slot_pool_strength)
    for candidate in candidates:
        s, n = counts(candidate.key) if candidate.kind == "kernel" else counts(option_key(candidate.kind, False))
        a, b = kernel_prior if candidate.kind == "kernel" else prior
        candidate.successes, candidate.trials, candidate.mean = s, n, _beta_mean(a + s, b + n - s)
        candidate.lift = s / n - (all_s - s) / (all_n - n) if n and all_n > n else None
    cold = config.cold_rates.get(f"{backend}/{request.family}") if request.context == "fresh" else None
    bare_prior = _shrunk(prior, cold[0], cold[1], config.cold_prior_strength) if cold else prior
    kinds = {c.kind for c in candidates}
    memory_keys = [option_key(kind, ranked) for kind in MEMORY_KINDS if kind in kinds for ranked in (False, True)]
    memory_s = sum(counts(key)[0] for key in memory_keys)
    memory_n = sum(counts(key)[1] for key in memory_keys)
    memory_prior = _shrunk(tuple(config.memory_prior), memory_s, memory_n, config.slot_pool_strength)

    def value(key: str, option_prior: tuple[float, float], s: int, n: int) -> OptionValue:
        return OptionValue(key=key, successes=s, trials=n, prior=option_prior,
                           mean=_beta_mean(option_prior[0] + s, option_prior[1] + n - s))

    options = [value(BARE, bare_prior, *counts(BARE))] + [value(key, memory_prior, *counts(key)) for key in memory_keys]
    choice = SlotChoice(family=request.family, context=request.context, candidates=candidates, options=options)
    if mode == "none" or (not memory_keys and mode != "similarity"):
        choice.reason = "none" if mode == "none" else "nothing but the generic example"
        return choice
    if mode == "similarity":  # the nearest kernel, else the family's example, with the ranked items
        kernels = [c for c in candidates if c.kind == "kernel"]
        nearest = max(kernels, key=lambda c: c.similarity or 0.0) if kernels else None
        picked = nearest or next((c for c in candidates if c.kind == "example"), candidates[0])
        return _chosen(choice, picked, ranked=True, reason="nearest")
    bare = options[0]
    if not cold and request.context == "fresh" and bare.trials < config.cold_drafts:
        return _chosen(choice, candidates[0], ranked=False, reason="cold")  # measuring the family's cold rate
    # Thompson sampling in steps, so that several memory options (or kernels) do not each get a
    # chance against bare: bare against memory (its option of the highest posterior mean), then
    # which memory option, then, for kernels, which kernel.
    # Greedy (`slot_greedy`, a frozen bank's evaluation): the posterior means, no exploration.
    def draw(option: OptionValue) -> float:
        if config.slot_greedy:
            return option.mean
        return rng.beta(option.prior[0] + option.successes, option.prior[1] + option.trials - option.successes)

    reason = "greedy" if config.slot_greedy else "thompson"
    if draw(bare) >= draw(max(options[1:], key=lambda o: o.mean)):
        return _chosen(choice, candidates[0], ranked=False, reason=reason)
    best = max(options[1:], key=draw).key
    ranked = best.endswith(RANKED)
    for kind in LADDER_KINDS:  # one candidate each
        if best.removesuffix(RANKED) == _CLASS[kind]:
            return _chosen(choice, next(c for c in candidates if c.kind == kind), ranked, reason)
    kernels = [c for c in candidates if c.kind == "kernel"]
    picked = max(kernels, key=lambda c: c.mean if config.slot_greedy else rng.beta(
        kernel_prior[0] + c.successes, kernel_prior[1] + c.trials - c.successes))
    return _chosen(choice, picked, ranked, reason)


def _chosen(choice: SlotChoice, picked: SlotCandidate, ranked: bool, reason: str) -> SlotChoice:
    choice.chosen, choice.kind, choice.ranked, choice.reason = picked.key, picked.kind, ranked, reason
    choice.option = option_key(picked.kind, ranked)
    return choice
