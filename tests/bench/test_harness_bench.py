"""bench/harness.py: a case whose evaluations are not feasible is reported with its verdict,
not a crash on the timings it never had."""

from __future__ import annotations

import argparse
from pathlib import Path

from bench.harness import CANDIDATES, SUITE, case_summary, run_case

BROKEN = CANDIDATES / "broken" / "compile_error.cpp"  # g++ refuses it in well under a second


def test_a_case_that_stops_at_the_compile_gate_is_reported_with_its_reason(capsys):
    args = argparse.Namespace(repeats=1, trials=3, flush_ms=None)
    case = run_case("relu.broken", SUITE / "4_ReLU.py", Path(BROKEN), args, "cpu")
    assert not case["all_feasible"]
    rows = case["cold"] + case["cached"]
    assert rows and all(r["gate"] == "compile" and r["category"] == "compile_error" and r["reason"] for r in rows)
    assert case["cached_correctness_s"] is None  # what the summary line used to format as a number
    line = capsys.readouterr().out.strip().splitlines()[-1]
    assert line == case_summary("relu.broken", case)
    assert "NOT FEASIBLE in 2 of 2 evaluations, first: compile/compile_error: " + rows[0]["reason"] in line
    assert "correctness - s" in line


def test_a_feasible_case_summary_has_no_verdict_note():
    row = {"feasible": True, "wall_s": 1.0}
    case = {"cold_median_s": 1.5, "cached_median_s": 1.0, "cached_process_start_s": 0.002, "cached_correctness_s": 0.4,
            "cached_profile_s": 0.5, "flushes_s": 0.1, "cached_overhead_s": 0.1, "cached_correctness_cpu_s": 0.3,
            "cached_profile_cpu_s": 0.4, "load1_median": 2.0, "cold": [row], "cached": [row]}
    line = case_summary("relu.kernel", case)
    assert line.startswith("relu.kernel: cold 1.50 s, cached 1.00 s (medians; child start 0.002 s, correctness 0.40 s")
    assert "NOT FEASIBLE" not in line
