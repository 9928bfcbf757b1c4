"""The worked-example slot of a draft prompt, decided from the outcomes of earlier drafts.

Candidates for the slot (issue 27): the generic worked example, the family template of the
task (shown before the ranked items, beside the generic example), and banked feasible kernels
of the task's own family whose signature has the same shape. Each candidate's value is a Beta
posterior of the success rate of the drafts that showed it, kept per backend, family and
draft context (a fresh first draft or a retry after a failed one: the last benchmark decided
operators at the first draft and recovered 1.6% of the time after a failure, so one rate for
both would judge a candidate by when it happened to be tried).

Value mode samples the posteriors and shows the best (Thompson sampling: no tuning constant,
and concurrent episodes that see the same counts before the outcomes arrive still spread over
the close candidates instead of all taking one upper bound), in two steps: a kernel or not (the
family's pooled kernel record against the generic example and the template), then which
kernel. A banked kernel new to the slot starts from the pooled outcomes of the family's
kernels, shrunk to a few trials, so that "kernels of this family hurt fresh drafts" carries
over to the next kernel. Similarity
mode takes the nearest kernel, else the template, else the generic example; none always the
generic example.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from memory_actor.items import MemoryItem

SlotKind = Literal["generic", "template", "kernel"]
SlotContext = Literal["fresh", "retry"]
GENERIC = "generic"
KERNELS = "kernels"  # the pooled outcomes of every kernel candidate of a family and context
ALL = "all"  # every draft of a family and context: the "did not show it" side of a candidate's lift


class SlotRequest(BaseModel):
    """What the memory needs to list a draft's slot candidates."""

    model_config = ConfigDict(extra="forbid")

    task_id: str = Field(..., description="the task drafted: its own kernels are not candidates")
    family: str = Field(..., description="the task's dominant operator family (actors/families.py)")
    shape: str = Field("", description="the kernel signature's shape (parameter types, names left out)")
    context: SlotContext = Field("fresh", description="fresh: no earlier attempt shown; retry: after a failed one")
    template: str | None = Field(None, description="the api item name of the family's template, if the task has one")


class SlotCandidate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    key: str = Field(..., description="'generic', or the template's or kernel's item id")
    kind: SlotKind
    similarity: float | None = None
    successes: int = 0
    trials: int = 0
    mean: float = Field(0.5, description="posterior mean of its success rate")
    lift: float | None = Field(None, description="success rate when shown minus the rate of the family's other "
                               "drafts in this context (None until both sides have drafts)")


class SlotChoice(BaseModel):
    """The memory's decision for one draft, and the candidates it chose among."""

    model_config = ConfigDict(extra="forbid")

    family: str
    context: SlotContext
    chosen: str = GENERIC
    kind: SlotKind = "generic"
    candidates: list[SlotCandidate] = Field(default_factory=list)


class SlotOutcome(BaseModel):
    """What a draft's prompt actually showed in the slot (the prompt may fall back to the generic
    example), sent back with the draft's value update: its verdict credits that candidate."""

    model_config = ConfigDict(extra="forbid")

    backend: str
    family: str
    context: SlotContext
    key: str
    kind: SlotKind


def slot_kernel_key(item: MemoryItem) -> tuple[str, str, str] | None:
    """(backend, family, signature shape) of a feasible kernel, from the tags the episode gives
    the traces it stores ('family:...', 'shape:...'); None for a trace without them."""
    tags = dict(tag.split(":", 1) for tag in item.tags if ":" in tag)
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
        """Count one draft; returns the changed keys with their absolute counts (for the log)."""
        keys = [outcome.key, ALL] + ([KERNELS] if outcome.kind == "kernel" else [])
        changed = {}
        for candidate in keys:
            key = stat_key(outcome.backend, outcome.family, outcome.context, candidate)
            successes, trials = self.get(key)
            self.set(key, successes + int(success), trials + 1)
            changed[key] = list(self.counts[key])
        return changed

    def state(self) -> dict[str, list[int]]:
        return {key: list(value) for key, value in self.counts.items()}


def _posterior(successes: int, trials: int, prior: tuple[float, float]) -> tuple[float, float]:
    return prior[0] + successes, prior[1] + trials - successes


def decide(mode: str, backend: str, request: SlotRequest, candidates: list[SlotCandidate], stats: SlotStats,
           prior: tuple[float, float], pool_strength: float, rng: np.random.Generator) -> SlotChoice:
    """Fill in the candidates' statistics and choose one; `candidates` lists the generic example
    first, then the template, then the kernels by similarity."""
    def key(candidate: str) -> str:
        return stat_key(backend, request.family, request.context, candidate)

    all_s, all_n = stats.get(key(ALL))
    pool_s, pool_n = stats.get(key(KERNELS))
    weight = min(1.0, pool_strength / pool_n) if pool_n else 0.0
    kernel_prior = (prior[0] + weight * pool_s, prior[1] + weight * (pool_n - pool_s))
    posteriors = []
    for candidate in candidates:
        s, n = stats.get(key(candidate.key))
        a, b = _posterior(s, n, kernel_prior if candidate.kind == "kernel" else prior)
        others = all_n - n
        candidate.successes, candidate.trials, candidate.mean = s, n, a / (a + b)
        candidate.lift = s / n - (all_s - s) / others if n and others else None
        posteriors.append((a, b))
    choice = SlotChoice(family=request.family, context=request.context, candidates=candidates)
    if mode == "none" or not candidates:
        return choice
    if mode == "similarity":
        kernels = [c for c in candidates if c.kind == "kernel"]
        nearest = max(kernels, key=lambda c: c.similarity or 0.0) if kernels else None
        picked = nearest or next((c for c in candidates if c.kind == "template"), candidates[0])
    else:
        # Two draws: first whether a kernel at all (the family's pooled kernel record against the
        # generic example and the template), then which kernel. One draw per kernel would give
        # the kernels as a class one chance per kernel, and split their evidence.
        kernel_rows = [row for row, c in enumerate(candidates) if c.kind == "kernel"]
        draws = [rng.beta(a, b) if c.kind != "kernel" else -1.0 for c, (a, b) in zip(candidates, posteriors, strict=True)]
        best = int(np.argmax(draws))
        if kernel_rows and rng.beta(*_posterior(pool_s, pool_n, prior)) > draws[best]:
            best = max(kernel_rows, key=lambda row: rng.beta(*posteriors[row]))
        picked = candidates[best]
    choice.chosen, choice.kind = picked.key, picked.kind
    return choice
