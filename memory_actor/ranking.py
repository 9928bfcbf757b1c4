"""Phase 2 of retrieval: choose N of the recalled pool by value (epsilon-greedy), by the MemRL
mixed score, or by similarity alone; and the size of the recall pool."""

from __future__ import annotations

import math

import numpy as np

from memory_actor.config import MemoryConfig


def recall_pool_size(n: int, bank_size: int, config: MemoryConfig) -> int:
    """K = lambda * N, lambda growing by `lambda_growth` per tenfold of bank size past the start."""
    growth = config.lambda_growth * max(0.0, math.log10(max(bank_size, 1) / config.lambda_growth_start))
    lam = min(config.recall_lambda + growth, max(config.recall_lambda_max, config.recall_lambda))
    return max(n, math.ceil(lam * n))


def zscore(values: np.ndarray) -> np.ndarray:
    if values.size == 0:  # an empty pool: numpy would warn about the mean of nothing
        return np.zeros(0, dtype=np.float64)
    std = float(values.std())
    if std < 1e-12:
        return np.zeros_like(values, dtype=np.float64)
    return (values - values.mean()) / std


def mixed_score(sims: np.ndarray, q: np.ndarray, w_sim: float, w_q: float) -> np.ndarray:
    """w_sim * z(sim) + w_q * clip(z(Q), -3, 3), z taken over the recalled pool."""
    return w_sim * zscore(sims.astype(np.float64)) + w_q * np.clip(zscore(q), -3.0, 3.0)


def epsilon_greedy(scores: np.ndarray, n: int, epsilon: float, rng: np.random.Generator) -> list[int]:
    """Fill n slots: with probability epsilon a random unchosen entry, else the best-scoring one.

    Positions are into `scores`, which is ordered by similarity, so ties in score fall to the
    more similar entry (a fresh bank, all Q equal, ranks by similarity).
    """
    greedy = list(np.argsort(-scores, kind="stable"))
    remaining = set(greedy)
    chosen: list[int] = []
    while len(chosen) < min(n, len(scores)):
        if epsilon > 0 and rng.random() < epsilon:
            pick = int(rng.choice(sorted(remaining)))
        else:
            pick = next(int(pos) for pos in greedy if pos in remaining)
        remaining.discard(pick)
        chosen.append(pick)
    return chosen


def select(sims: np.ndarray, q: np.ndarray, n: int, mode: str, ranker: str, config: MemoryConfig,
           rng: np.random.Generator) -> tuple[list[int], np.ndarray]:
    """Positions of the chosen pool entries and the scores they were ranked by."""
    if mode == "similarity":
        scores = sims.astype(np.float64)
        return list(range(min(n, len(sims)))), scores
    scores = mixed_score(sims, q, config.w_sim, config.w_q) if ranker == "mixed" else q.astype(np.float64)
    return epsilon_greedy(scores, n, config.epsilon, rng), scores
