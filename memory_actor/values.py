"""The value rule Q <- Q + alpha (r - Q), the priors new items start from, and the shaping of raw
rewards before they update values: refine rewards standardised by their running statistics, then
every reward taken relative to its stage's running mean (the baseline)."""

from __future__ import annotations

import math

from pydantic import BaseModel

from memory_actor.config import MemoryConfig
from memory_actor.items import VALUE_STAGES, MemoryItem

FEASIBLE_GATE = "ok"


def q_update(q: float, reward: float, alpha: float) -> float:
    """One Monte-Carlo step of an item's value towards the reward it was part of."""
    return q + alpha * (reward - q)


def is_feasible_trace(item: MemoryItem) -> bool:
    """A trace that passed anti-hack, compile and correctness: the verifier's gate is 'ok', and the
    episode stores a different gate when a review or the profiler turns a pass down."""
    return item.kind == "trace" and item.verdict is not None and item.verdict.gate == FEASIBLE_GATE


def prior(item: MemoryItem, config: MemoryConfig) -> float:
    """The initial Q of a new item, by kind and origin (see MemoryConfig.q_init_*). A kernel is
    judged by its verdict and a lesson is a lesson whatever their stage says (stage 'seed' is
    MemoryItem's default, so it only marks seeded knowledge for api and practice items)."""
    if item.kind == "trace":
        return config.q_init_trace_feasible if is_feasible_trace(item) else config.q_init_trace_failed
    if item.kind == "experience":
        return config.q_init_experience
    if item.stage == "seed":
        return config.q_init_seeded
    return config.q_init


class RewardNormaliser(BaseModel):
    """Welford's running mean and variance of raw refine rewards (persisted with the bank)."""

    count: int = 0
    mean: float = 0.0
    m2: float = 0.0

    @property
    def std(self) -> float:
        return math.sqrt(self.m2 / (self.count - 1)) if self.count > 1 else 0.0

    def observe(self, reward: float) -> None:
        self.count += 1
        delta = reward - self.mean
        self.mean += delta / self.count
        self.m2 += delta * (reward - self.mean)

    def normalise(self, reward: float, warmup: int, clip: float) -> float:
        """Observe `reward`, then return it standardised by the statistics that include it.

        Until `warmup` rewards are seen (or while they are all equal) the raw reward is used,
        clipped, because a mean and deviation of one sample say nothing.
        """
        self.observe(reward)
        std = self.std
        if self.count < warmup or std < 1e-9:
            value = reward
        else:
            value = (reward - self.mean) / std
        return max(-clip, min(clip, value))


class Baseline(BaseModel):
    """A stage's running mean reward over about the last `horizon` rewards (persisted with the bank).

    A plain mean until `horizon` rewards, then an exponential average with weight 1/horizon, so
    the baseline follows a campaign that starts to succeed instead of remembering every early
    failure.
    """

    count: int = 0
    mean: float = 0.0

    def observe(self, reward: float, horizon: int) -> None:
        self.count += 1
        self.mean += (reward - self.mean) / min(self.count, horizon)


class RewardShaper:
    """Raw reward -> (reward_applied, advantage) for one stage, with the running state that needs.

    The bank owns one; serial replays (tests, the benchmark) build their own from the same config
    and feed it the same rewards in the same order to get the same values.
    """

    def __init__(self, config: MemoryConfig, normaliser: RewardNormaliser | None = None,
                 baselines: dict[str, Baseline] | None = None):
        self.config = config
        self.normaliser = normaliser or RewardNormaliser()
        self.baselines = {stage: Baseline() for stage in VALUE_STAGES}
        self.baselines.update(baselines or {})

    def prior(self, item: MemoryItem) -> float:
        return prior(item, self.config)

    def shape(self, stage: str, reward: float) -> tuple[float, float]:
        """The reward after normalisation (refine), and the advantage Q values move towards: that
        reward minus the mean of the stage's earlier ones (0 before any; the reward itself with
        baseline off). The current reward is not in its own baseline, so the first failure of a
        stage still counts as a failure."""
        applied = reward
        if stage == "refine" and self.config.normalise_refine:
            applied = self.normaliser.normalise(reward, self.config.normalise_warmup, self.config.normalised_clip)
        if not self.config.baseline:
            return applied, applied
        baseline = self.baselines[stage]
        advantage = applied - baseline.mean
        baseline.observe(applied, self.config.baseline_horizon)
        return applied, advantage

    def state(self) -> dict:
        """JSON-ready state, for the meta table."""
        return {"normaliser": self.normaliser.model_dump(),
                "baselines": {stage: b.model_dump() for stage, b in self.baselines.items()}}

    @classmethod
    def from_state(cls, config: MemoryConfig, state: dict) -> RewardShaper:
        return cls(config, RewardNormaliser(**state.get("normaliser", {})),
                   {stage: Baseline(**value) for stage, value in state.get("baselines", {}).items()})
