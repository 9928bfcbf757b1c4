"""Statistics of the learning benchmark, in plain Python (no scipy needed).

With a handful of operators and replicates, asymptotic formulas mislead, so the tests are
exact: the two-sided sign test counts wins and losses; the Wilcoxon signed-rank test is an
exact permutation test over all 2^n sign flips of the ranked differences (counted by dynamic
programming). Intervals for a proportion are Wilson score intervals, which stay inside
[0, 1] and behave at 0 and 1, where fast_0 often is. The benchmark's mean pass@1 over
operators gets a percentile bootstrap over operators (the operator is the unit of the test).
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from statistics import median
from typing import Any

Z95 = 1.959963984540054


def wilson(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """95% Wilson score interval of a proportion; (0, 1) when n is 0 (nothing known)."""
    if n <= 0:
        return 0.0, 1.0
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, round(centre - half, 4)), min(1.0, round(centre + half, 4))


def sign_test(differences: Sequence[float]) -> float:
    """Two-sided exact sign test: zeros dropped; p = P(a Binomial(n, 1/2) is as extreme)."""
    wins = sum(d > 0 for d in differences)
    losses = sum(d < 0 for d in differences)
    n = wins + losses
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(min(wins, losses) + 1)) / 2**n
    return min(1.0, 2 * tail)


def _ranks(values: Sequence[float]) -> list[float]:
    """Ranks 1..n of the values, ties sharing their average rank."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def wilcoxon_signed_rank(differences: Sequence[float]) -> float:
    """Two-sided Wilcoxon signed-rank test, exact: zeros dropped, tied |d| share their average
    rank, and the statistic (the sum of the ranks of positive differences) is compared with its
    distribution over all 2^n assignments of signs to the ranks, counted by dynamic programming
    over doubled (integer) ranks, so ties and any n stay exact."""
    nonzero = [d for d in differences if d != 0]
    n = len(nonzero)
    if n == 0:
        return 1.0
    doubled = [round(2 * r) for r in _ranks([abs(d) for d in nonzero])]
    total = sum(doubled)
    counts = [1] + [0] * total  # counts[s]: sign assignments whose positive ranks sum to s
    for r in doubled:
        for s in range(total, r - 1, -1):
            counts[s] += counts[s - r]
    observed = sum(r for r, d in zip(doubled, nonzero, strict=True) if d > 0)
    extreme = abs(2 * observed - total)  # distance from the centre, doubled to stay integral
    hits = sum(c for s, c in enumerate(counts) if abs(2 * s - total) >= extreme)
    return min(1.0, hits / 2**n)


def paired(better: dict[str, float], worse: dict[str, float]) -> dict[str, Any]:
    """Compare two arms over the operators both ran: per operator `better - worse`. With no
    operator in common the p-values are None: no evidence, not evidence of no difference."""
    tasks = sorted(set(better) & set(worse))
    diffs = [better[t] - worse[t] for t in tasks]
    return {
        "operators": len(tasks),
        "wins": sum(d > 0 for d in diffs),
        "losses": sum(d < 0 for d in diffs),
        "ties": sum(d == 0 for d in diffs),
        "mean_difference": round(sum(diffs) / len(diffs), 4) if diffs else None,
        "p_sign": round(sign_test(diffs), 6) if diffs else None,
        "p_wilcoxon": round(wilcoxon_signed_rank(diffs), 6) if diffs else None,
    }


def score(first_feasible: int | None, iterations: int) -> int:
    """Iterations an operator spent with a feasible kernel: T + 1 - first feasible iteration,
    0 if never; the area under its fast_0 step. Higher is better; it rewards solving early."""
    return 0 if first_feasible is None else iterations + 1 - first_feasible


def fast_0_curve(firsts: Sequence[int | None], iterations: int) -> list[dict[str, Any]]:
    """fast_0(t) for t = 1..T over the runs (operator x replicate), with its 95% interval."""
    n = len(firsts)
    curve = []
    for t in range(1, iterations + 1):
        solved = sum(1 for f in firsts if f is not None and f <= t)
        low, high = wilson(solved, n)
        curve.append({"t": t, "fast_0": round(solved / n, 4) if n else None, "ci95": [low, high]})
    return curve


def attempts_to_first_feasible(firsts: Sequence[int | None]) -> dict[str, Any]:
    """Median over runs, an unsolved run counting as later than any solved one (so the median
    is unknown once half the runs are unsolved), and the mean over the solved runs."""
    solved = sorted(f for f in firsts if f is not None)
    n = len(firsts)
    ordered = solved + [math.inf] * (n - len(solved))
    mid = median(ordered) if ordered else math.inf
    return {"runs": n, "solved": len(solved), "median": None if math.isinf(mid) else mid,
            "mean_solved": round(sum(solved) / len(solved), 2) if solved else None}


def bootstrap_mean(values: Sequence[float], reps: int = 10000, seed: int = 0) -> tuple[float, float] | None:
    """95% percentile bootstrap interval of the mean, resampling the values (operators) with
    replacement; seeded, so a summary is reproducible. None for no values."""
    if not values:
        return None
    rng = random.Random(f"bootstrap/{seed}")
    n = len(values)
    means = sorted(sum(values[rng.randrange(n)] for _ in range(n)) / n for _ in range(reps))
    return round(means[int(0.025 * reps)], 4), round(means[min(reps - 1, int(0.975 * reps))], 4)
