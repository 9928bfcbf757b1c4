"""bench/climb_sensitivity.py: a climb's best/first recomputed at other scalar global-memory costs."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest

from bench.climb import main
from bench.climb_sensitivity import rescaled_us, sensitivity

RESULTS = Path(__file__).resolve().parents[2] / "bench" / "results"
PUBLISHED = RESULTS / "2026-12-06-qwen2.5-coder-1.5b-instruct-climb-npu-twin-5"


def _stages(modelled_us: float, gm: int, blocks: int = 24) -> dict:
    return {"modelled_us": modelled_us, "gm_scalar_accesses": gm, "blocks": blocks, "vector_cores": 48}


def test_only_the_scalar_global_memory_part_is_rescaled():
    scalar = _stages(4374.2, 1048576)  # 1048576 x 0.1 us over 24 cores = 4369.07 us of it
    assert rescaled_us(scalar, 0.1) == pytest.approx(4374.2)
    assert rescaled_us(scalar, 0.01) == pytest.approx(4374.2 - 0.9 * 4369.0667, rel=1e-6)
    vector = _stages(4.94, 0)
    assert rescaled_us(vector, 0.001) == 4.94


def test_the_headline_at_each_cost_follows_the_table_s_rule(tmp_path, capsys):
    (tmp_path / "plan.json").write_text(json.dumps({"arms": ["value"], "seeds": [0, 1]}))
    (tmp_path / "first").mkdir()
    (tmp_path / "first" / "a.json").write_text(json.dumps(
        {"feasible": True, "rung": "first", "profile": {"stages": _stages(1003.0, 240000)}}))  # 240000 x 0.1 us / 24 = 1000 us of it
    for seed, best_us in ((0, 10.0), (1, 20.0)):
        runs = tmp_path / "runs" / f"value-s{seed}"
        runs.mkdir(parents=True)
        (runs / "a.json").write_text(json.dumps({"task": "a", "eager_ms": 0.01}))
        (runs / "a.attempts.jsonl").write_text("\n".join(json.dumps(a) for a in (
            {"feasible": True, "stages": _stages(best_us, 0)},
            {"feasible": False, "stages": _stages(1.0, 0)},  # wrong: never the best
        )) + "\n")
    rows = sensitivity(tmp_path, [0.1, 0.01])
    assert rows["median_best_over_first_value@0.1"] == round((1003 / 10 + 1003 / 20) / 2, 3)
    assert rows["median_best_over_first_value@0.01"] == round((103 / 10 + 103 / 20) / 2, 3)
    assert rows["share_within_2x_eager_value@0.1"] == 1.0  # median best 15 us against eager's 10
    assert main(["sensitivity", "--out", str(tmp_path), "--costs", "0.001"]) == 0
    # 13 us first: faster than seed 1's best (1.0x there), 1.3x on seed 0
    assert json.loads(capsys.readouterr().out)["median_best_over_first_value@0.001"] == round((13 / 10 + 1.0) / 2, 3)


def test_at_the_assumed_cost_it_gives_the_published_climb_s_headline(tmp_path):
    with tarfile.open(PUBLISHED / "raw.tar.xz") as archive:
        archive.extractall(tmp_path, members=[m for m in archive.getmembers()
                                              if m.name == "plan.json" or m.name.startswith(("first/", "runs/"))],
                           filter="data")
    headline = json.loads((PUBLISHED / "summary.json").read_text())["headline"]
    rows = sensitivity(tmp_path, [0.1])
    for arm in ("none", "value"):
        assert rows[f"median_best_over_first_{arm}@0.1"] == pytest.approx(headline[f"median_best_over_first_{arm}"], rel=1e-3)
        assert rows[f"share_within_2x_eager_{arm}@0.1"] == headline[f"share_within_2x_eager_{arm}"]
        assert rows[f"share_within_2x_eager_{arm}@0.1"] == headline[f"share_within_2x_eager_{arm}"]
