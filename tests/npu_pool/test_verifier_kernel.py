"""The gates on kernel-source candidates: good ones pass, each broken one stops where it should."""

from __future__ import annotations

from pathlib import Path

import pytest

from npu_pool.tasks.spec import load_task
from npu_pool.verifier import verify

from .harness_support import (
    A3_CANDIDATES,
    SMALL_BYTES,
    SUITE,
    candidate_file,
    fixture_candidate,
    fixture_task,
    harness_config,
    header,
)

GOOD = sorted((A3_CANDIDATES / "good_kernel").glob("*.cpp"))
BROKEN = sorted((A3_CANDIDATES / "broken").glob("*.cpp"))
FAST_GOOD = {"9_LeakyReLU.cpp", "18_Softmax.cpp"}
# test_sandbox covers hangs and crashes; the fixtures below cover compile errors and offsets.
SLOW_BROKEN = {"infinite_loop.cpp", "out_of_bounds_write.cpp", "compile_error.cpp", "off_by_constant.cpp"}


def _suite_task(candidate: Path):
    return load_task(SUITE / header(candidate, "task"), max_bytes=SMALL_BYTES)


def _params(paths, fast):
    return [pytest.param(p, id=p.name, marks=() if p.name in fast else pytest.mark.slow) for p in paths]


@pytest.mark.parametrize("path", _params(GOOD, FAST_GOOD))
def test_good_kernel_candidates_are_feasible(path):
    verdict = verify(_suite_task(path), candidate_file(path), harness_config())
    assert verdict.feasible, f"{verdict.gate}/{verdict.category}: {verdict.reason}\n{verdict.details}"
    assert verdict.gate == "ok" and verdict.sizes


@pytest.mark.parametrize("path", _params(BROKEN, {p.name for p in BROKEN} - SLOW_BROKEN))
def test_broken_kernel_candidates_stop_at_their_gate(path):
    verdict = verify(_suite_task(path), candidate_file(path), harness_config(run_timeout_s=5.0))
    assert not verdict.feasible
    assert verdict.gate == header(path, "expect-gate"), f"{verdict.category}: {verdict.reason}\n{verdict.details}"
    assert verdict.reason and verdict.details


def test_copy_for_relu_over_rand_inputs_fails_only_on_the_perturbed_trial():
    verdict = verify(fixture_task("huge_relu"), fixture_candidate("relu_copy.cpp"), harness_config())
    assert (verdict.gate, verdict.category) == ("correctness", "mismatch")
    assert "perturbed" in verdict.reason


def test_mismatch_details_say_how_much_and_where():
    verdict = verify(fixture_task("huge_relu"), fixture_candidate("relu_plus_one.cpp"), harness_config())
    assert (verdict.gate, verdict.category) == ("correctness", "mismatch")
    assert "trial 1" in verdict.reason
    assert "elements differ (100%)" in verdict.details and "max abs diff" in verdict.details
    assert "input shapes:" in verdict.details


@pytest.mark.slow  # A3's half_output.cpp covers the same in the default run
def test_unwritten_outputs_stay_nan_and_are_caught():
    verdict = verify(fixture_task("huge_relu"), fixture_candidate("relu_half_written.cpp"), harness_config())
    assert (verdict.gate, verdict.category) == ("correctness", "nonfinite")
    assert "NaN" in verdict.details


def test_compile_error_reports_the_first_compiler_error():
    verdict = verify(fixture_task("huge_relu"), fixture_candidate("relu_syntax_error.cpp"), harness_config())
    assert (verdict.gate, verdict.category) == ("compile", "compile_error")
    assert "kernel.cpp:3" in verdict.details and "zero" in verdict.details


def test_two_outputs_and_a_float_scalar():
    verdict = verify(fixture_task("sum_and_product"), fixture_candidate("sum_and_product.cpp"), harness_config())
    assert verdict.feasible, verdict.details
