"""The one decision a draft's prompt takes beyond the static brief, learned from earlier drafts.

Options (issues 41 and 54): `bare` (the brief and the generic worked example, nothing else); a
bundle example of the task's family in the slot, each under the option its bundle entry declares
(`option:`; the verified idiomatic example is `example`, the family's first rung, issue 54, the
simplest correct kernel of the example's task, is `rung`), listed where the brief offers it
(SlotRequest.example, .rung); a banked feasible
kernel of the task's own family and signature shape (`kernels`, then which kernel); each of
these alone or with the ranked items (`+ranked`). Ranked items come only with an option that
asks for them, so nothing reaches a prompt around the decision. Each option's value is a Beta
posterior of the success rate of the drafts that showed it, per backend, family and draft
context (a fresh first draft or a retry after a failed one: they succeed at very different
rates, and the same content can lift one and sink the other, so neither informs the other).

Evidence moves the decision, never a prior (issue 54; the values in slot_values.py): bare starts
from the operator's own cold rate where known, the family's otherwise; an option that shows
memory starts at bare's posterior (no lift assumed). Online (value mode) the posteriors are
sampled (Thompson sampling: no tuning constant; concurrent episodes that see the same counts
before their outcomes arrive spread over the close options instead of all taking one), in steps:
bare against memory (its option of the highest posterior mean), then which memory option, then
which kernel. A frozen bank's evaluation (`slot_greedy`) takes the option of the highest
posterior mean, and shows it only where that mean is above bare's and the pass@1 it costs in
expectation under the posteriors is at most `slot_max_loss` (2 points); ties and thin evidence
stay bare. Similarity mode shows the nearest kernel, else the example, with the ranked items;
none shows nothing. A draft that starts from an option (SlotRequest.start: the learning pass's
first draft of an operator starts from the rung) shows it whatever the values say; its outcome
counts for that option like any draft's.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from memory_actor.config import MemoryConfig
from memory_actor.items import MemoryItem
from memory_actor.slot_values import (
    Beta,
    bare_posterior,
    beta_mean,
    compare,
    family_cold_record,
    operator_cold_record,
    shipped_option_record,
    shrunk,
    untried_at,
)

SlotKind = Literal["generic", "example", "kernel"]  # an example: a bundle item of the family (its rung too)
# A refinement's context is its start point's rung (issue 65): refining a first-rung (scalar) kernel and
# a vector one differ as much as a fresh draft and a retry, and the next rung up differs with it.
SlotContext = Literal["fresh", "retry", "refine@first", "refine@ub_scalar", "refine@vector"]
REFINE_TAG = "decision:refine"  # a speed rung (memory_actor/seeding.py): an option of the refine decision only
GENERIC = "generic"
BARE = "bare"  # the generic example and nothing else
KERNELS = "kernels"  # the pooled outcomes of every kernel of a family and context
ALL = "all"  # every draft of a family and context: the "did not show it" side of a candidate's lift
RANKED = "+ranked"
OPERATOR = "bare@"  # + task id: one operator's fresh drafts shown bare (its own cold rate)
CROSS_BACKEND = "own_kernel_other_backend"  # the operator's own verified kernel of another backend (C for Ascend C)
DEFAULT_OPTION = {"generic": "generic", "example": "example", "kernel": KERNELS}


def option_key(option: str, ranked: bool) -> str:
    """The statistic key of an option: bare, generic+ranked, example[+ranked], kernels[+ranked], or
    a bundle-declared example option (a rung) [+ranked]. `option` may also be a slot kind."""
    option = DEFAULT_OPTION.get(option, option)
    if option == "generic" and not ranked:
        return BARE
    return option + (RANKED if ranked else "")


class SlotRequest(BaseModel):
    """What the memory needs to list a draft's options."""

    model_config = ConfigDict(extra="forbid")

    task_id: str = Field(..., description="the task drafted: its own kernels are not candidates")
    family: str = Field(..., description="the task's dominant operator family (actors/families.py)")
    shape: str = Field("", description="the kernel signature's shape (actors/signature_shape.py)")
    context: SlotContext = Field("fresh", description="fresh: no earlier attempt shown; retry: after a failed one")
    example: str | None = Field(None, description="the api item name of the family's verified worked example, where "
                                "the brief offers it (actors/briefing.py)")
    rung: str | None = Field(None, description="the api item name of the family's first rung (the simplest correct "
                             "kernel), where the brief offers it")
    cross_backend: str | None = Field(None, description="a backend whose verified kernel of this very operator may be "
                                      "shown (`cpu` for an Ascend C draft: the formula in a language the model knows; "
                                      "option own_kernel_other_backend, issue 64)")
    start: str | None = Field(None, description="an option (or several, comma-separated, the first the bank offers) to show whatever the values say (`rung`: the learning "
                              "pass's first draft of an operator, episode.start_from_rung); its outcome counts for "
                              "the option like any draft's")
    climb: str | None = Field(None, description="a refinement (context refine@<rung>): the api item name of the next "
                              "rung up of the task's family and shape (a speed rung, issue 65), where one maps onto "
                              "the task's signature (actors/climb.py)")

    def offered(self) -> list[str]:
        """The names of the family's bundle examples a prompt of this task may show (the brief's); a
        refinement's: the next rung up."""
        if is_refine(self.context):
            return [self.climb] if self.climb else []
        return [name for name in (self.example, self.rung) if name]


class SlotCandidate(BaseModel):
    """What can fill the slot: the generic example, an example of the family (its rung too), or a banked kernel."""

    model_config = ConfigDict(extra="forbid")

    key: str = Field(..., description="'generic', or the example's or kernel's item id")
    kind: SlotKind
    option: str = Field("", description="the option it belongs to: generic, kernels, or an example's declared "
                        "option (bundle field `option`, default 'example'); filled from the kind when empty")
    similarity: float | None = None
    successes: int | float = 0  # a refinement's options count fractions of a success (slot_success)
    trials: int = 0
    mean: float = Field(0.5, description="posterior mean of its success rate")
    lift: float | None = Field(None, description="success rate when shown minus the rate of the family's other "
                               "drafts in this context (None until both sides have drafts)")

    @model_validator(mode="after")
    def _option_of_kind(self) -> SlotCandidate:
        self.option = self.option or DEFAULT_OPTION[self.kind]
        return self


class OptionValue(BaseModel):
    """One option's record and posterior, as the decision saw it."""

    model_config = ConfigDict(extra="forbid")

    key: str
    successes: int | float = Field(0, description="its drafts' successes in this bank (family and context); a "
                                   "refinement's a sum of fractions (slot_success)")
    trials: int = 0
    mean: float = 0.5
    prior: tuple[float, float] = Field((1.0, 1.0), description="Beta before this bank's drafts of the option")
    posterior: tuple[float, float] = Field((1.0, 1.0), description="Beta the decision used")
    better: float | None = Field(None, description="memory options: posterior probability that its rate is above "
                                 "bare's")
    loss: float | None = Field(None, description="memory options: the pass@1 showing it costs in expectation, "
                               "E[max(bare - option, 0)] (the greedy decision's risk, against slot_max_loss)")


class SlotChoice(BaseModel):
    """The memory's decision for one draft, and the options and candidates it chose among."""

    model_config = ConfigDict(extra="forbid")

    family: str
    context: SlotContext
    task_id: str = ""
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
    option: str = Field("", description="the option shown (filled from the kind when empty)")
    task_id: str = Field("", description="the task drafted: a fresh bare draft also counts for its own cold rate")
    ranked: bool = Field(False, description="at least one ranked item reached the prompt")

    @model_validator(mode="after")
    def _option_of_kind(self) -> SlotOutcome:
        self.option = self.option or DEFAULT_OPTION[self.kind]
        return self


def example_option_of(item: MemoryItem) -> str | None:
    """The option a family's bundle example belongs to: its `option:` tag (memory_actor/seeding.py
    tags each example entry with its bundle field `option`, default `example`); None for an item
    that is no family example. A bank seeded before the first rungs were declared this way holds
    them tagged `rung`: read as option `rung`."""
    if "example" in item.tags:
        return item.tag_values().get("option", "example")
    return "rung" if "rung" in item.tags else None


def slot_kernel_key(item: MemoryItem) -> tuple[str, str, str] | None:
    """(backend, family, signature shape) of a feasible kernel, from the tags the episode gives
    the traces it stores ('family:...', 'shape:...'); None for a trace without them."""
    tags = item.tag_values()
    if "family" not in tags:
        return None
    return item.backend, tags["family"], tags.get("shape", "")


def is_refine(context: str) -> bool:
    """Whether a decision's context is a refinement's (refine@<its start point's rung>)."""
    return context.startswith("refine@")


def slot_success(stage: str, reward: float) -> float:
    """What one outcome counts for the option it showed: a draft's verdict 1 or 0; a refinement
    (r + 1) / 2 of a success, r its tanh-log reward (tanh(log best - log new); -1 when infeasible):
    the refine decision's values learn from the measured speedup, not only whether it was faster
    (a kernel 10x faster than the best so far counts 0.99, one as fast 0.5, a broken one 0)."""
    if stage != "refine":
        return float(reward > 0)
    return min(1.0, max(0.0, (reward + 1.0) / 2.0))


def stat_key(backend: str, family: str, context: str, candidate: str) -> str:
    return f"{backend}/{family}/{context}/{candidate}"


class SlotStats:
    """Successes and trials per statistic key; the bank persists them (log rows, then meta)."""

    def __init__(self, state: dict[str, list[int]] | None = None):
        self.counts: dict[str, list] = {}
        for key, (s, n) in (state or {}).items():
            self.set(key, s, n)

    def get(self, key: str) -> tuple[int | float, int]:
        successes, trials = self.counts.get(key, (0, 0))
        return successes, trials

    def set(self, key: str, successes: float, trials: int) -> None:
        # a refinement counts a fraction of a success (slot_success): kept exact where whole
        self.counts[key] = [int(successes) if float(successes).is_integer() else float(successes), int(trials)]

    def record(self, outcome: SlotOutcome, success: float) -> dict[str, list[int]]:
        """Count one draft (or refinement) for its option, its kernel, the family's total and, fresh
        and bare, its operator's cold record; `success` 1 or 0, a refinement's a fraction
        (slot_success); returns the changed keys with their absolute counts (for the log)."""
        option = option_key(outcome.option, outcome.ranked)
        keys = [option, ALL] + ([outcome.key] if outcome.kind == "kernel" else [])
        if option == BARE and outcome.context == "fresh" and outcome.task_id:
            keys.append(OPERATOR + outcome.task_id)
        changed = {}
        for candidate in keys:
            key = stat_key(outcome.backend, outcome.family, outcome.context, candidate)
            successes, trials = self.get(key)
            self.set(key, successes + success, trials + 1)
            changed[key] = list(self.counts[key])
        return changed

    def state(self) -> dict[str, list[int]]:
        return {key: list(value) for key, value in self.counts.items()}


def decide(mode: str, backend: str, request: SlotRequest, candidates: list[SlotCandidate], stats: SlotStats,
           config: MemoryConfig, rng: np.random.Generator) -> SlotChoice:
    """Fill in the statistics and choose an option; `candidates` lists the generic example first,
    then the family's examples, then the kernels by similarity; `config` gives the priors
    (slot_prior, cold_rates, option_prior_strength...), slot_greedy and slot_max_loss."""
    def counts(candidate: str) -> tuple[int, int]:
        return stats.get(stat_key(backend, request.family, request.context, candidate))

    fresh = request.context == "fresh"
    own = counts(OPERATOR + request.task_id) if fresh else (0, 0)
    screened = operator_cold_record(config, backend, request.family, request.task_id) if fresh else None
    family_record = family_cold_record(config, backend, request.family) if fresh else None
    operator = (own[0] + (screened or (0, 0))[0], own[1] + (screened or (0, 0))[1])
    bare_s, bare_n = counts(BARE)
    bare_post = bare_posterior(config, family_record, (bare_s - own[0], bare_n - own[1]), operator)
    start = untried_at(bare_post, config.option_prior_strength)  # no lift assumed

    def value(key: str, prior: Beta, posterior: Beta, s: int, n: int) -> OptionValue:
        return OptionValue(key=key, successes=s, trials=n, prior=prior, posterior=posterior, mean=beta_mean(posterior))

    bare = value(BARE, bare_posterior(config, family_record, (0, 0), screened or (0, 0)), bare_post, bare_s, bare_n)
    declared = list(dict.fromkeys(c.option for c in candidates if c.kind != "generic"))  # in candidate order
    memory: list[OptionValue] = []
    # a refinement's ranked items are the refine stage's own (always recalled): its options are the rungs alone
    rankings = (False,) if is_refine(request.context) else (False, True)
    for key in (option_key(option, ranked) for option in declared for ranked in rankings):
        # X+ranked holds all that X holds: it starts where X's evidence has put X (at bare's while
        # X is untried), so ranked items are assumed no lift either
        base = start if not key.endswith(RANKED) else untried_at(memory[-1].posterior, config.option_prior_strength)
        s, n = counts(key)
        prior = _option_prior(base, backend, request, key, stats, config)
        option = value(key, prior, (prior[0] + s, prior[1] + n - s), s, n)
        option.better, option.loss = compare(option.posterior, bare_post)
        memory.append(option)
    # a kernel new to the slot: the family's pooled kernel record, counted as `slot_pool_strength` drafts
    pool_s, pool_n = (sum(pair) for pair in zip(counts(KERNELS), counts(KERNELS + RANKED), strict=True))
    kernel_prior = untried_at((start[0] + pool_s, start[1] + pool_n - pool_s), config.slot_pool_strength)
    all_s, all_n = counts(ALL)
    by_key = {o.key: o for o in [bare, *memory]}
    for candidate in candidates:
        if candidate.kind == "kernel":
            s, n = counts(candidate.key)
            candidate.mean = beta_mean((kernel_prior[0] + s, kernel_prior[1] + n - s))
        else:
            record = by_key[option_key(candidate.option, False)]
            s, n, candidate.mean = record.successes, record.trials, record.mean
        candidate.successes, candidate.trials = s, n
        candidate.lift = s / n - (all_s - s) / (all_n - n) if n and all_n > n else None
    choice = SlotChoice(family=request.family, context=request.context, task_id=request.task_id,
                        candidates=candidates, options=[bare, *memory])
    if mode == "none" or (not memory and mode != "similarity"):
        choice.reason = "none" if mode == "none" else "nothing but the generic example"
        return choice
    if mode == "similarity":  # the nearest kernel, else the family's example, with the ranked items
        kernels = [c for c in candidates if c.kind == "kernel"]
        nearest = max(kernels, key=lambda c: c.similarity or 0.0) if kernels else None
        picked = nearest or next((c for c in candidates if c.kind == "example"), candidates[0])
        return _chosen(choice, picked, ranked=not is_refine(request.context), reason="nearest")
    if fresh and family_record is None and screened is None and bare_n < config.cold_drafts:
        return _chosen(choice, candidates[0], ranked=False, reason="cold")  # measuring the family's cold rate
    best = max(memory, key=lambda o: o.mean)  # the first declared on ties
    if config.slot_greedy:
        # A frozen bank: memory only where its posterior mean beats bare's (ties go to bare) and
        # what it may cost in expectation is within slot_max_loss.
        if best.mean <= bare.mean or (best.loss or 0.0) > config.slot_max_loss:
            return _chosen(choice, candidates[0], ranked=False, reason="greedy")
        return _option(choice, best.key, candidates, kernel_prior, None, "greedy")

    # Thompson sampling in steps, so that several memory options (or kernels) do not each get a
    # chance against bare: bare against memory (its option of the highest posterior mean), then
    # which memory option, then, for kernels, which kernel. A tie in the draws goes to bare.
    def draw(option: OptionValue) -> float:
        return float(rng.beta(*option.posterior))

    if draw(best) <= draw(bare):
        return _chosen(choice, candidates[0], ranked=False, reason="thompson")
    return _option(choice, max(memory, key=draw).key, candidates, kernel_prior, rng, "thompson")


def _option_prior(base: Beta, backend: str, request: SlotRequest, key: str, stats: SlotStats,
                  config: MemoryConfig) -> Beta:
    """An option's prior before this context's own drafts of it: `base` (bare's posterior mean: no
    lift assumed), moved by the default model's published drafts that showed it (with
    `shipped_rates`, counted as at most `cold_prior_strength` drafts). A retry also borrows the
    option's fresh-draft record (published and this bank's), counted as at most
    `retry_borrow_strength` drafts: without it every option of a retry tied with bare and went
    bare (v5: after a failed rung draft the retries went bare and recovered nothing), while a
    rung that lifts fresh drafts is the best evidence a retry has; the retry's own drafts soon
    lead (issue 64)."""
    def shipped(context: str) -> tuple[int, int] | None:
        return shipped_option_record(backend, request.family, context, key) if config.shipped_rates else None

    measured = shipped(request.context)
    prior = shrunk(base, *measured, config.cold_prior_strength) if measured else base
    if request.context == "retry":
        bank = stats.get(stat_key(backend, request.family, "fresh", key))
        published = shipped("fresh") or (0, 0)
        prior = shrunk(prior, bank[0] + published[0], bank[1] + published[1], config.retry_borrow_strength)
    return prior


def _option(choice: SlotChoice, key: str, candidates: list[SlotCandidate], kernel_prior: Beta,
            rng: np.random.Generator | None, reason: str) -> SlotChoice:
    """The candidate that shows option `key` (for kernels: the best kernel by mean, or by a draw)."""
    ranked = key.endswith(RANKED)
    option = key.removesuffix(RANKED)
    if option != KERNELS:
        return _chosen(choice, next(c for c in candidates if c.option == option), ranked, reason)
    kernels = [c for c in candidates if c.kind == "kernel"]
    picked = max(kernels, key=lambda c: c.mean if rng is None else rng.beta(
        kernel_prior[0] + c.successes, kernel_prior[1] + c.trials - c.successes))
    return _chosen(choice, picked, ranked, reason)


def _chosen(choice: SlotChoice, picked: SlotCandidate, ranked: bool, reason: str) -> SlotChoice:
    choice.chosen, choice.kind, choice.ranked, choice.reason = picked.key, picked.kind, ranked, reason
    choice.option = option_key(picked.option, ranked)
    return choice
