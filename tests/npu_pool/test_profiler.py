"""The profiler: statistics, baselines, speedups, the sanity bound and the roofline hint."""

from __future__ import annotations

import json

import pytest

from npu_pool.profiler import ProfileError, profile, stats
from npu_pool.roofline import peaks_path
from npu_pool.verifier import evaluate

from .harness_support import fixture_candidate, fixture_task, harness_config


def test_stats_median_and_iqr():
    assert stats([9.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]) == (5.0, 5.0)  # quartiles 2.5 and 7.5
    assert stats([2.0, 4.0]) == (3.0, 0.0)


def test_profile_report_of_a_correct_kernel():
    task = fixture_task("huge_relu")
    report = profile(task, fixture_candidate("relu.cpp"), harness_config(timed_trials=7))
    assert report.trials == 7
    assert report.median_ms > 0 and report.iqr_ms >= 0 and report.baseline_eager_ms > 0
    assert report.speedup_vs_eager == pytest.approx(report.baseline_eager_ms / report.median_ms)
    assert report.baseline_compile_ms is None and "disabled" in report.baseline_compile_error
    assert report.bound == "memory" and report.achieved_gbps > 0
    assert any("memory-bound" in hint for hint in report.hints)
    assert report.sizes == task.sizes
    assert "cpu:" in "".join(json.loads(peaks_path().read_text()))  # peaks measured once, cached


def test_excessive_speedup_is_flagged_not_taken():
    task = fixture_task("slow_reference_relu")
    # The fixture's reference is deliberately slow (about 9x to 50x here, depending on load); a
    # bound of 2 keeps the test about the flagging, not about how busy the machine is.
    verdict, report = evaluate(task, fixture_candidate("relu_slow_ref.cpp"), harness_config(speedup_bound=2.0))
    assert verdict.feasible
    assert report.speedup_vs_eager > 2.0
    assert "excessive_speedup" in report.flags and "excessive_speedup" in verdict.flags


def test_profile_of_an_infeasible_candidate_raises_with_the_verdict():
    with pytest.raises(ProfileError) as caught:
        profile(fixture_task("huge_relu"), fixture_candidate("relu_plus_one.cpp"), harness_config())
    assert caught.value.verdict.gate == "correctness"


@pytest.mark.slow
def test_torch_compile_baseline_is_measured_or_explained(tmp_path):
    config = harness_config(compile_baseline=True, build_cache_dir=str(tmp_path))
    report = profile(fixture_task("huge_relu"), fixture_candidate("relu.cpp"), config)
    assert (report.baseline_compile_ms is None) != (report.baseline_compile_error is None)
    if report.baseline_compile_ms is not None:
        assert report.speedup_vs_compile == pytest.approx(report.baseline_compile_ms / report.median_ms)
