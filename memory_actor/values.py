"""The value rule Q <- Q + alpha (r - Q) and the running normaliser of refine rewards."""

from __future__ import annotations

import math

from pydantic import BaseModel


def q_update(q: float, reward: float, alpha: float) -> float:
    """One Monte-Carlo step of an item's value towards the reward it was part of."""
    return q + alpha * (reward - q)


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
