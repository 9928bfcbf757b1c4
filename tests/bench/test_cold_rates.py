"""bench/cold_rates.py: the shipped cold rates (memory_actor/bundles/cold_rates.yaml) are what the
published screenings give, and the benchmark's own computation of them."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from bench.cold_rates import SHIPPED, derive, main

RESULTS = Path(__file__).resolve().parents[2] / "bench" / "results"
RUNS = [RESULTS / "2026-12-02-qwen2.5-coder-1.5b-instruct-v4-cpu",
        RESULTS / "2026-12-02-qwen2.5-coder-1.5b-instruct-v4-npu-twin"]


def test_the_shipped_file_is_derived_from_the_published_screenings(tmp_path, capsys):
    assert main([*map(str, RUNS), "--check"]) == 0, "run python -m bench.cold_rates ... to write it again"
    shipped = yaml.safe_load(SHIPPED.read_text())
    assert shipped["model"] == "qwen2.5-coder-1.5b-instruct"
    assert set(shipped["sources"]) == {"cpu", "npu-twin"}
    # the same numbers as each run's own cold_rates.json (the value arm's, bench/learning/screening.py)
    from bench.learning.archive import unpack

    for run in RUNS:
        folder = tmp_path / run.name
        unpack(run, folder, only=["cold_rates.json"])
        for key, value in json.loads((folder / "cold_rates.json").read_text()).items():
            assert shipped["rates"][key] == value
    other = tmp_path / "other.yaml"
    other.write_text(SHIPPED.read_text().replace("[0, 36]", "[1, 36]"))
    assert main([*map(str, RUNS), "--check", "--out", str(other)]) == 1  # a hand edit is caught


def test_two_runs_of_one_backend_are_refused():
    import pytest

    with pytest.raises(SystemExit, match="two runs for cpu"):
        derive([RUNS[0], RUNS[0]])
