"""bench/measured_rates.py: the shipped rates (memory_actor/bundles/measured_rates.yaml) are what the
published runs give: the screenings' cold rates (the benchmark's own computation of them) and the
evaluations' drafts that showed a memory option."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from bench.measured_rates import SHIPPED, derive, main

RESULTS = Path(__file__).resolve().parents[2] / "bench" / "results"
RUNS = [RESULTS / "2026-12-02-qwen2.5-coder-1.5b-instruct-v4-cpu",
        RESULTS / "2026-12-02-qwen2.5-coder-1.5b-instruct-v4-npu-twin",
        RESULTS / "2026-12-03-qwen2.5-coder-1.5b-instruct-pilot-cpu",  # a pilot adds option records, no rates
        RESULTS / "2026-12-03-qwen2.5-coder-1.5b-instruct-pilot-npu-twin"]


def test_the_shipped_file_is_derived_from_the_published_screenings(tmp_path, capsys):
    assert main([*map(str, RUNS), "--check"]) == 0, "run python -m bench.measured_rates ... to write it again"
    shipped = yaml.safe_load(SHIPPED.read_text())
    assert shipped["model"] == "qwen2.5-coder-1.5b-instruct"
    assert set(shipped["sources"]) == {"cpu", "npu-twin"}
    # v4's evaluations: the twin's scan example passed 4 of 32 (38_Cumprod), C's row-reduction example 0 of 32
    assert shipped["options"]["npu-twin/scan/fresh/example"] == [4, 32]
    assert shipped["options"]["cpu/row_reduction/fresh/example+ranked"] == [0, 32]
    # the C pilot (bench/learning/pilot.py): the first rungs' fresh drafts, 4 a pilot operator
    assert shipped["options"]["cpu/row_reduction/fresh/rung"] == [7, 8]
    assert shipped["options"]["npu-twin/elementwise/fresh/rung"] == [4, 8]  # the twin pilot: none had 0 of 8
    # the same numbers as each run's own cold_rates.json (the value arm's, bench/learning/screening.py)
    from bench.learning.archive import unpack

    for run in RUNS[:2]:  # the screenings (a pilot has none)
        folder = tmp_path / run.name
        unpack(run, folder, only=["cold_rates.json"])
        for key, value in json.loads((folder / "cold_rates.json").read_text()).items():
            assert shipped["rates"][key] == value
    other = tmp_path / "other.yaml"
    other.write_text(SHIPPED.read_text().replace("[0, 36]", "[1, 36]"))
    assert main([*map(str, RUNS), "--check", "--out", str(other)]) == 1  # a hand edit is caught


def test_two_screenings_of_one_backend_are_refused():
    import pytest

    with pytest.raises(SystemExit, match="two screenings for cpu"):
        derive([RUNS[0], RUNS[0]])
