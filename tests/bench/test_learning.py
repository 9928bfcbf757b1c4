"""bench/learning.py end to end at a tiny size: scripted HTTP LLM, real harness, real banks, no Ray."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bench import learning
from tests.actors.openai_server import OpenAITestServer
from tests.launch.kernel_agent import ElementwiseAgent

SUITE = Path(__file__).resolve().parents[2] / "suites" / "cpu" / "level1"
FAST = ["--set", "harness.backend=cpu", "--set", "harness.compile_baseline=false", "--set", "harness.timed_trials=5",
        "--set", "harness.warmup_trials=1", "--set", "harness.correctness_trials=2",
        "--set", "harness.profile_input_sets=1", "--set", "llm.candidate_format=kernel",
        "--set", "episode.lessons=false", "--set", "episode.review_flagged=false"]


@pytest.fixture
def suite(tmp_path) -> Path:
    """Level 1: ReLU (the agent answers it) and Sqrt (it cannot); level 2: a copy of Tanh."""
    root = tmp_path / "suite"
    (root / "level1").mkdir(parents=True)
    (root / "level2").mkdir()
    shutil.copyfile(SUITE / "4_ReLU.py", root / "level1" / "4_ReLU.py")
    shutil.copyfile(SUITE / "13_Sqrt.py", root / "level1" / "13_Sqrt.py")
    shutil.copyfile(SUITE / "8_Tanh.py", root / "level2" / "8_Tanh.py")
    return root


def last_json_line(text: str) -> dict:
    return json.loads(text.strip().splitlines()[-1])


def test_selection_arms_transfer_summary_and_resume(suite, tmp_path, capsys):
    """The whole benchmark at 2 operators x 2 iterations, then resumed twice."""
    out = tmp_path / "results"
    with OpenAITestServer() as server:
        agent = ElementwiseAgent()
        server.responder = agent
        argv = [*FAST, "--set", f"harness.build_cache_dir={tmp_path / 'build'}", "--suite", str(suite),
                "--pool", "4_ReLU,13_Sqrt,level2/*", "--operators", "2", "--iterations", "2",
                "--llm-base-url", server.base_url, "--llm-model", server.model, "--out", str(out)]
        assert learning.main(argv) == 0
        headline = last_json_line(capsys.readouterr().out)
        requests = sum(agent.counts.values())

        # The selection pass kept the hardest (Sqrt, never solved) and a level-2 operator for transfer.
        selection = json.loads((out / "selection.json").read_text())
        assert selection["selected"] == ["13_Sqrt", "8_Tanh"]
        assert selection["pool"]["4_ReLU"] == {"attempts": 1, "feasible": True}

        summary = json.loads((out / "summary.json").read_text())
        arms = {arm["arm"]: arm for arm in summary["arms"]}
        assert list(arms) == ["none", "similarity", "value", "transfer"]
        for name in ("none", "similarity", "value"):
            arm = arms[name]
            assert arm["retrieval"] == name and arm["operators"] == 2 and arm["attempts"] == 4
            assert arm["fast_0_by_iteration"] == [0.5, 0.5] and arm["fast_0_final"] == 0.5
            assert arm["fast_0_transfer_tasks"] == [1.0, 1.0] and arm["finished"] and arm["tokens"] > 0
            assert arm["median_speedup_best_over_first"] >= 1.0 and arm["wall_s"] is not None
            # Tanh twice right, Sqrt twice without code (the agent's script)
            assert arm["feasible_attempts"] == 2 and arm["failures_by_gate"] == {"no_code": 2}
        assert arms["transfer"]["operators"] == 1 and arms["transfer"]["fast_0_final"] == 1.0
        assert summary["meta"]["warm_tasks"] == ["13_Sqrt"] and summary["meta"]["transfer_tasks"] == ["8_Tanh"]
        assert summary["meta"]["tasks"] == ["8_Tanh", "13_Sqrt"]  # level 2 first
        assert summary["meta"]["model"]["name"] == server.model and summary["meta"]["machine"]["nproc"] >= 1
        assert summary["meta"]["budgets"]["iterations"] == 2 and summary["meta"]["git_commit"]

        # Every arm started from the same seeded bank, with its own retrieval mode recorded.
        for name in ("none", "similarity", "value", "transfer-warm", "transfer"):
            run = json.loads((out / "arms" / name / "summary.json").read_text())
            assert run["settings"]["memory"]["uri"] == str((out / "banks" / name).resolve())
            assert run["settings"]["memory"]["seed"] == 0 and run["finished_at"]
        markdown = (out / "summary.md").read_text()
        assert "| value | value | 2 | 4 | 2 | 50% | 0.50 0.50 | 100% |" in markdown and "| no_code 2 |" in markdown
        assert (out / "report" / "report.html").is_file() and (out / "report" / "correctness.png").is_file()

        assert headline["bench"] == "learning" and headline["fast_0_value"] == 0.5
        assert headline["fast_0_level2_cold_value"] == 1.0 and headline["fast_0_level2_warm_transfer"] == 1.0
        assert headline["attempts"] == 3 + 4 * 3 + 2 + 2  # selection, arms, warm-up, transfer

        # Run again: every arm is finished, so nothing is asked of the model and the table is the same.
        assert learning.main(argv) == 0
        assert sum(agent.counts.values()) == requests
        again = last_json_line(capsys.readouterr().out)
        assert {k: v for k, v in again.items() if k != "wall_s"} == {k: v for k, v in headline.items() if k != "wall_s"}

        # An arm left unfinished (a killed benchmark) runs again, from a fresh copy of its bank.
        summary_path = out / "arms" / "transfer" / "summary.json"
        summary_path.write_text(json.dumps(json.loads(summary_path.read_text()) | {"finished_at": None}))
        assert learning.main(argv) == 0
        assert sum(agent.counts.values()) == requests + 2
        assert len((out / "arms" / "transfer" / "attempts.jsonl").read_text().splitlines()) == 2
        assert json.loads(summary_path.read_text())["finished_at"]
        assert last_json_line(capsys.readouterr().out)["fast_0_level2_warm_transfer"] == 1.0

        with pytest.raises(SystemExit, match="another plan"):  # the folder belongs to that benchmark
            learning.main([*argv, "--iterations", "3"])


def test_dry_run_prints_the_plan_and_estimate(capsys):
    assert learning.main(["--dry-run", "--tasks", "18_Softmax,level2/4_MatmulSoftmax", "--iterations", "3",
                          "--seconds-per-attempt", "10"]) == 0
    plan = last_json_line(capsys.readouterr().out)
    assert plan["operators"] == ["18_Softmax", "4_MatmulSoftmax"] and plan["selection_attempts"] == 0
    assert plan["attempts"] == 2 * 3 * 3 + 2 * 3 and plan["estimated_s"] == plan["attempts"] * 10


def test_default_size_is_about_two_hours_at_the_measured_forty_seconds_an_attempt(capsys):
    assert learning.main(["--dry-run"]) == 0
    plan = last_json_line(capsys.readouterr().out)
    assert plan["seconds_per_attempt"] == 40
    assert plan["iterations"] == learning.DEFAULT["iterations"] and plan["estimated_s"] <= 2.05 * 3600
    assert "24_SquareMatmul" in plan["pool"] and "4_ReLU" not in plan["pool"]


def test_a_second_benchmark_on_the_same_day_publishes_beside_the_first(tmp_path):
    results = tmp_path / "results"
    first = learning.publish_folder(results, "2026-11-22-m", tmp_path / "a")
    assert first == results / "2026-11-22-m"
    first.mkdir(parents=True)
    (first / "summary.json").write_text(json.dumps({"meta": {"results": str(tmp_path / "a")}}))
    assert learning.publish_folder(results, "2026-11-22-m", tmp_path / "a") == first  # republished in place
    assert learning.publish_folder(results, "2026-11-22-m", tmp_path / "b") == results / "2026-11-22-m-2"
