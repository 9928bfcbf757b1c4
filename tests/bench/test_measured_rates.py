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
        RESULTS / "2026-12-03-qwen2.5-coder-1.5b-instruct-pilot-npu-twin",
        RESULTS / "2026-12-06-qwen2.5-coder-1.5b-instruct-pilot-v6-cpu",  # the v6 pilot: the new rungs' first evidence
        RESULTS / "2026-12-06-qwen2.5-coder-1.5b-instruct-pilot-v6-npu-twin"]


def test_the_shipped_file_is_derived_from_the_published_screenings(tmp_path, capsys):
    assert main([*map(str, RUNS), "--check"]) == 0, "run python -m bench.measured_rates ... to write it again"
    shipped = yaml.safe_load(SHIPPED.read_text())
    assert shipped["model"] == "qwen2.5-coder-1.5b-instruct"
    assert set(shipped["sources"]) == {"cpu", "npu-twin"}
    # v4's evaluations: the twin's scan example passed 4 of 32 (38_Cumprod), C's row-reduction example 0 of 32
    assert shipped["options"]["npu-twin/scan/fresh/example"] == [4, 32]
    assert shipped["options"]["cpu/row_reduction/fresh/example+ranked"] == [0, 32]
    # the pilots (bench/learning/pilot.py, pilot_v6.py): the first rungs' fresh drafts, 4 a pilot operator
    assert shipped["options"]["cpu/row_reduction/fresh/rung"] == [9, 16]  # v5's pilot 7 of 8, v6's 2 of 8
    assert shipped["options"]["npu-twin/elementwise/fresh/rung"] == [6, 16]  # v5's 4 of 8, v6's 2 of 8
    assert shipped["options"]["npu-twin/matmul/fresh/rung"] == [5, 5]  # the v6 pilot's new matmul rung
    # the v6 pilot's own_c arm showed the operator's own C kernel: the cross-backend option, never
    # the banked kernels' evidence
    assert shipped["options"]["npu-twin/elementwise/fresh/own_kernel_other_backend"] == [6, 8]
    assert not any(key.endswith("/kernels") or "/unknown/" in key for key in shipped["options"])
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
