"""The pilot before v5 (issue 54, point 5; bench/learning/pilot.py): fresh drafts of operators
outside every pool, bare against the family's first rung. A model on a loopback OpenAI-compatible
server that can only copy (tests/bench/learning/test_ladder.py's), real cpu builds and gates, a
real seeded bank; the folder it leaves is read by bench.measured_rates as a published pilot."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bench.learning import pilot
from bench.learning.plan import FAMILIES, WIDE_ADDITIONS
from bench.learning.summary import eval_figures
from npu_pool.paths import cache_root
from tests.actors.openai_server import OpenAITestServer
from tests.bench.learning.test_ladder import FAST, RUNGS, CopyingAgent

SUITE = Path(__file__).resolve().parents[3] / "suites" / "cpu" / "level1"
THREE_INPUTS = """import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, a, b, c):
        return a * b + c


def get_inputs():
    return [torch.randn(8, 64), torch.randn(8, 64), torch.randn(8, 64)]


def get_init_inputs():
    return []
"""


@pytest.mark.parametrize("backend", ["cpu", "npu-twin"])
def test_the_pilot_operators_lie_outside_every_pool_and_their_rungs_map_onto_them(backend):
    tasks = pilot.pilot_tasks(backend)
    pool = {stem for families in (FAMILIES, WIDE_ADDITIONS) for stems in families.values() for stem in stems}
    assert len(tasks) == 6 and not {p.stem for p in tasks} & pool
    families = sorted(pilot.family_of(p) for p in tasks)
    assert families == sorted(["elementwise", "row_reduction", "softmax_norm"] * 2)  # three families, two each


def test_an_operator_of_a_pool_or_without_a_rung_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(pilot, "PILOT_TASKS", tmp_path)
    (tmp_path / "p9_FusedMultiplyAdd.py").write_text(THREE_INPUTS)  # a shape no rung has (issue 64: every suite shape has one)
    with pytest.raises(SystemExit, match="no rung on cpu"):
        pilot.pilot_tasks("cpu")
    (tmp_path / "p9_FusedMultiplyAdd.py").unlink()
    shutil.copy(SUITE / "4_ReLU.py", tmp_path / "4_ReLU.py")
    assert pilot.pilot_tasks("cpu") == []  # only p<k>_ files are the pilot's
    shutil.copy(SUITE / "4_ReLU.py", tmp_path / "p0_ReLU.py")
    monkeypatch.setattr(pilot, "FAMILIES", {"elementwise": ["p0_ReLU"]})
    with pytest.raises(SystemExit, match="in a benchmark pool"):
        pilot.pilot_tasks("cpu")


def test_a_pilot_measures_the_rung_against_the_bare_brief_and_reads_as_a_published_pilot(tmp_path, monkeypatch,
                                                                                           capsys):
    from bench.measured_rates import option_records

    tasks = tmp_path / "tasks"
    tasks.mkdir()
    shutil.copy(pilot.PILOT_TASKS / "p2_Cube.py", tasks / "p2_Cube.py")
    monkeypatch.setattr(pilot, "PILOT_TASKS", tasks)
    monkeypatch.setattr("bench.decision_replay.PILOT_TASKS", tasks)
    out = tmp_path / "pilot"
    copies = {"x * x * x": ("elementwise", [("std::log(1.0f + std::fabs(v))", "v * v * v")])}
    with OpenAITestServer() as server:
        agent = CopyingAgent(copies=copies)
        server.responder = agent
        argv = ["--backend", "cpu", "--out", str(out), "--drafts", "1", *FAST,
                "--set", f"harness.build_cache_dir={cache_root() / 'test-build'}",
                "--llm-base-url", server.base_url, "--llm-model", server.model]
        assert pilot.main(argv) == 0
    line = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    # the copying model fails bare and passes with the rung: the table says so
    assert (line["pass1_none"], line["pass1_rung"], line["complete"]) == (0.0, 1.0, True)
    assert line["compile_errors_none"] == 1 and line["compile_errors_rung"] == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["by_family"] == {"none": {"elementwise": [0, 1]}, "rung": {"elementwise": [1, 1]}}
    assert "| rung | 1 | 100.0% | 0 | 1/1 |" in (out / "summary.md").read_text()
    [bare] = [json.loads(x) for x in (out / "arms" / "eval-none-d0" / "attempts.jsonl").read_text().splitlines()]
    [rung] = [json.loads(x) for x in (out / "arms" / "eval-rung-d0" / "attempts.jsonl").read_text().splitlines()]
    rung_id = RUNGS["elementwise"].id
    assert rung_id not in {s["id"] for s in bare["shown"]}
    assert rung_id in {s["id"] for s in rung["shown"] if s["role"] in ("example", "pinned")}
    assert not [s for s in rung["shown"] if s["role"] == "context"]  # the rung alone, nothing ranked
    # bench.measured_rates reads it as a published pilot: the rung's fresh drafts, none of bare's
    assert option_records(out, "cpu") == {"cpu/elementwise/fresh/rung": [1, 1]}
    # the seeded bank stayed as seeded (frozen), and a rerun resumes nothing: it is complete
    assert eval_figures("rung", [out / "arms" / "eval-rung-d0"], ["p2_Cube"])["drafts"] == 1
    with pytest.raises(SystemExit, match="another plan"):
        pilot.main([*argv[:4], "--drafts", "2", *argv[6:]])
