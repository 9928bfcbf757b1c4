"""The gates on KernelBench ModelNew candidates (load_inline C++).

One load_inline build in the default run, cached by source hash under
~/.cache/evokernel/test-build, so a second run compiles nothing; the rest are slow.
"""

from __future__ import annotations

import pytest

from npu_pool.tasks import load_task
from npu_pool.verifier import evaluate, verify

from .harness_support import (
    A3_CANDIDATES,
    SMALL_BYTES,
    SUITE,
    candidate_file,
    harness_config,
    header,
)

GOOD = sorted((A3_CANDIDATES / "good_modelnew").glob("*.py"))
BROKEN = sorted((A3_CANDIDATES / "broken").glob("*_modelnew.py"))
SHARED = A3_CANDIDATES / "good_modelnew" / "9_LeakyReLU.py"


def _task(candidate):
    return load_task(SUITE / header(candidate, "task"), max_bytes=SMALL_BYTES)


@pytest.fixture(scope="module")
def leaky_relu_verdict():
    return verify(_task(SHARED), candidate_file(SHARED), harness_config())


def test_good_modelnew_candidate_is_feasible(leaky_relu_verdict):
    verdict = leaky_relu_verdict
    assert verdict.feasible, f"{verdict.gate}/{verdict.category}: {verdict.reason}\n{verdict.details}"
    assert verdict.sizes == {"batch_size": 128, "dim": 4096}


def test_second_evaluation_uses_the_build_cache_and_profiles(leaky_relu_verdict):
    assert leaky_relu_verdict.feasible
    verdict, report = evaluate(_task(SHARED), candidate_file(SHARED), harness_config())
    assert verdict.feasible and verdict.timings["compile_cached"] == 1.0
    assert report is not None and report.trials == 5 and report.median_ms > 0


@pytest.mark.slow
@pytest.mark.parametrize("path", GOOD, ids=[p.name for p in GOOD])
def test_all_good_modelnew_candidates_are_feasible(path):
    verdict = verify(_task(path), candidate_file(path), harness_config())
    assert verdict.feasible, f"{verdict.gate}/{verdict.category}: {verdict.reason}\n{verdict.details}"


@pytest.mark.slow
@pytest.mark.parametrize("path", BROKEN, ids=[p.name for p in BROKEN])
def test_broken_modelnew_candidates_stop_at_their_gate(path):
    verdict = verify(_task(path), candidate_file(path), harness_config())
    assert not verdict.feasible
    assert verdict.gate == header(path, "expect-gate"), f"{verdict.category}: {verdict.reason}\n{verdict.details}"
    if verdict.gate == "compile":
        assert "error" in verdict.details
