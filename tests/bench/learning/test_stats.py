"""The learning benchmark's statistics: exact tests, Wilson intervals, the per-arm pooling."""

from __future__ import annotations

import math
import random

import pytest

from bench.learning.stats import (
    attempts_to_first_feasible,
    fast_0_curve,
    paired,
    score,
    sign_test,
    wilcoxon_signed_rank,
    wilson,
)


def test_sign_test_is_the_exact_binomial_tail():
    assert sign_test([1, 1, 1, 1, 1, 1]) == pytest.approx(2 / 64)
    assert sign_test([1, -1]) == 1.0
    assert sign_test([0, 0]) == 1.0  # nothing but ties: no evidence
    # 8 wins, 2 losses, ties dropped: 2 * P(X <= 2) for X ~ Binomial(10, 1/2)
    assert sign_test([1] * 8 + [-1] * 2 + [0] * 5) == pytest.approx(2 * (1 + 10 + 45) / 1024)


def test_wilcoxon_is_exact_and_handles_ties_and_zeros():
    assert wilcoxon_signed_rank([1, 2, 3, 4, 5, 6]) == pytest.approx(2 / 64)
    assert wilcoxon_signed_rank([0.0, 0.0]) == 1.0
    assert wilcoxon_signed_rank([3, -3]) == 1.0
    # ties among |d| share ranks (1.5, 1.5, 3): positives hold 3, so only the all-positive and
    # all-negative patterns are as extreme: 2 of 8
    assert wilcoxon_signed_rank([1, 1, 2]) == pytest.approx(2 / 8)
    # a large n stays exact and fast
    assert wilcoxon_signed_rank(list(range(1, 41))) < 1e-10


def test_exact_tests_match_scipy_where_it_is_installed():
    stats = pytest.importorskip("scipy.stats")
    rng = random.Random(3)
    for _ in range(50):
        diffs = rng.sample([-9, -7, -5, -4, -2, 1, 3, 6, 8, 10, 11, 12], rng.randint(1, 10))  # distinct |d|
        assert wilcoxon_signed_rank(diffs) == pytest.approx(stats.wilcoxon(diffs, method="exact").pvalue)
        wins = sum(d > 0 for d in diffs)
        assert sign_test(diffs) == pytest.approx(stats.binomtest(wins, len(diffs)).pvalue)


def test_wilson_interval():
    assert wilson(0, 0) == (0.0, 1.0)
    low, high = wilson(0, 12)
    assert low == 0.0 and high == pytest.approx(0.2425, abs=1e-4)
    low, high = wilson(6, 12)
    assert (low, high) == pytest.approx((0.2538, 0.7462), abs=1e-4)
    low, high = wilson(12, 12)
    assert high == 1.0 and low == pytest.approx(0.7575, abs=1e-4)


def test_score_rewards_solving_early():
    assert [score(f, 6) for f in (1, 3, 6, None)] == [6, 4, 1, 0]


def test_fast_0_curve_pools_runs_with_intervals():
    curve = fast_0_curve([1, 3, None, None], iterations=3)
    assert [p["fast_0"] for p in curve] == [0.25, 0.25, 0.5]
    assert [p["t"] for p in curve] == [1, 2, 3]
    assert curve[-1]["ci95"] == list(wilson(2, 4))


def test_attempts_to_first_feasible():
    assert attempts_to_first_feasible([2, 4, None]) == {"runs": 3, "solved": 2, "median": 4, "mean_solved": 3.0}
    assert attempts_to_first_feasible([1, None, None, None])["median"] is None  # mostly unsolved
    assert attempts_to_first_feasible([]) == {"runs": 0, "solved": 0, "median": None, "mean_solved": None}


def test_paired_compares_the_operators_both_arms_ran():
    value = {"a": 6.0, "b": 4.0, "c": 0.0, "d": 2.0}
    similarity = {"a": 5.0, "b": 4.0, "c": 0.0, "e": 3.0}
    test = paired(value, similarity)
    assert (test["operators"], test["wins"], test["losses"], test["ties"]) == (3, 1, 0, 2)
    assert test["mean_difference"] == pytest.approx(1 / 3, abs=1e-4)
    assert test["p_sign"] == 1.0 and test["p_wilcoxon"] == 1.0
    assert not math.isnan(test["p_wilcoxon"])


def test_paired_without_a_common_operator_has_no_p_value():
    # An arm still learning (nothing evaluated yet) must not read as "no difference, p = 1".
    test = paired({"a": 1.0}, {})
    assert test["operators"] == 0 and test["mean_difference"] is None
    assert test["p_sign"] is None and test["p_wilcoxon"] is None
