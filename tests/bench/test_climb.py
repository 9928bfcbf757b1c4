"""bench/climb.py's table (issue 65, point 3): per operator and arm the median over seeds of
best/first and best/eager, the headline over the operators whose first kernel is scalar, what each
refinement was shown; on a results folder laid out as the pilot writes it (its first/ and runs/
records), and the pilot's operators and published first kernels as they are."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.climb import ARCHIVED, _refinement, archived_kernel, operators, plan_entry
from bench.climb_table import summarise

MODEL = {"name": "test-model", "endpoint": "test"}


def _result(task: str, arm: str, seed: int, first_ms: float, best_ms: float, shown: list[str]) -> dict:
    return {"task": task, "arm": arm, "seed": seed, "first_ms": first_ms, "eager_ms": 0.01, "best_ms": best_ms,
            "best_over_first": first_ms / best_ms, "best_over_eager": 0.01 / best_ms,
            "refinements": [{"iteration": i + 1, "shown": s, "gate": "ok" if s == "vector" else "compile",
                             "latency_ms": best_ms if s == "vector" else None} for i, s in enumerate(shown)]}


def _folder(tmp_path: Path) -> tuple[Path, dict]:
    out = tmp_path / "climb"
    plan = {"bench": "climb", "backend": "npu-twin", "operators": ["a/p1_Expm1.py", "a/p3_RowMaxAbs.py", "a/p9_Vec.py"],
            "k": 2, "seeds": [0, 1], "drafts": 0, "arms": ["none", "value"], "archived": {}}
    (out / "first").mkdir(parents=True)
    for task, rung in (("p1_Expm1", "first"), ("p3_RowMaxAbs", "first"), ("p9_Vec", "vector")):
        (out / "first" / f"{task}.json").write_text(json.dumps({"task": task, "feasible": True, "rung": rung,
                                                                 "origin": "archived: x"}))
    runs = {("none", 0): [("p1_Expm1", 4.0, ["bare", "bare"]), ("p3_RowMaxAbs", 3.0, ["bare", "bare"])],
            ("none", 1): [("p1_Expm1", 4.0, ["bare", "bare"]), ("p3_RowMaxAbs", 3.0, ["bare", "bare"])],
            ("value", 0): [("p1_Expm1", 0.005, ["vector", "bare"]), ("p3_RowMaxAbs", 3.0, ["bare", "vector"])],
            ("value", 1): [("p1_Expm1", 0.02, ["bare", "vector"]), ("p3_RowMaxAbs", 0.03, ["vector", "vector"])]}
    for (arm, seed), rows in runs.items():
        folder = out / "runs" / f"{arm}-s{seed}"
        folder.mkdir(parents=True)
        for task, best, shown in rows:
            first = 4.0 if task == "p1_Expm1" else 3.0
            (folder / f"{task}.json").write_text(json.dumps(_result(task, arm, seed, first, best, shown)))
    (out / "git_commit").write_text("abc\n")
    return out, plan


def test_the_table_takes_medians_over_seeds_and_the_headline_over_scalar_first_kernels(tmp_path):
    out, plan = _folder(tmp_path)
    line = summarise(out, plan, MODEL)
    summary = json.loads((out / "summary.json").read_text())
    rows = summary["per_operator"]
    assert rows["p1_Expm1"]["value"]["best_over_first"] == pytest.approx((800 + 200) / 2)  # median of 2 seeds
    assert rows["p1_Expm1"]["none"]["best_over_first"] == 1.0
    assert rows["p3_RowMaxAbs"]["value"]["best_over_first"] == pytest.approx((1 + 100) / 2)
    assert rows["p1_Expm1"]["value"]["shown"] == [["vector:ok", "bare:compile"], ["bare:compile", "vector:ok"]]
    headline = summary["headline"]
    assert {k: headline[k] for k in ("bench", "backend", "operators")} == {"bench": "climb", "backend": "npu-twin",
                                                                            "operators": 2}
    assert headline["median_best_over_first_value"] == pytest.approx((500 + 50.5) / 2)
    assert headline["median_best_over_first_none"] == 1.0
    # best/eager: p1 value median (2 + 0.5) / 2 = 1.25, p3 value (0.0033 + 0.33) / 2 = 0.17
    assert headline["share_within_2x_eager_value"] == 0.5 and headline["fast_1_value"] == 0.5
    assert headline["share_within_2x_eager_none"] == 0.0
    assert summary["meta"]["complete"] is False and summary["meta"]["finished_runs"] == 8  # p9 has no runs yet
    assert line["complete"] is False
    table = (out / "summary.md").read_text()
    assert "| p1_Expm1 | first | 1x | 0.0025x | 0/4 | 500x | 1.25x | 2/4 |" in table
    assert "- p3_RowMaxAbs value: bare:compile vector:ok; vector:ok vector:ok" in table


def test_what_a_refinement_was_shown_is_read_from_its_attempt():
    attempt = {"iteration": 2, "gate": "ok", "latency_ms": 0.005, "reward": 0.99, "reason": "matched",
               "shown": [{"id": "start", "role": "start"}, {"id": "x", "role": "climb"}]}
    assert _refinement(attempt)["shown"] == "rung"  # an id no speed rung has
    assert _refinement({**attempt, "shown": [{"id": "start", "role": "start"}]})["shown"] == "bare"


def test_the_pilot_s_operators_and_its_published_first_kernels():
    tasks = [p.stem for p in operators()]
    assert tasks[:6] == ["p1_Expm1", "p2_Cube", "p3_RowMaxAbs", "p4_RowRange", "p5_SoftmaxHalfTemperature",
                         "p6_LogSoftmin"] and len(tasks) == 18 and "45_ReLU6" in tasks
    assert all(p.is_file() for p in operators())
    for task in ARCHIVED:
        code = archived_kernel(task)
        assert code and "GetValue" in code and "extern \"C\" __global__ __aicore__ void kernel(" in code
    entry = plan_entry(6, [0, 1], 0)
    assert json.loads(json.dumps(entry)) == entry  # what plan.json holds reads back equal: a resume recognises it
    assert entry["arms"] == ["none", "value"] and plan_entry(6, [0, 1], 0, ["value"])["arms"] == ["value"]
    with pytest.raises(SystemExit, match="no arm similarity"):
        plan_entry(6, [0], 0, ["similarity"])


@pytest.mark.slow  # the first kernel and two refinements built, checked and profiled by the twin: a few minutes cold
def test_an_operator_s_refinements_start_from_its_first_kernel(tmp_path):
    """refine_operator on a real twin, a real bank and the loopback server as the model: the
    episode goes on from the published first kernel (its attempt 1), so its K attempts are all
    refinements; the result says what each was shown and how far the best climbed."""
    from bench.climb import first_kernels, refine_operator
    from bench.learning.learning_pass import LearningBenchmark
    from launch.config import load_settings
    from tests.actors.openai_server import OpenAITestServer, ScriptedAgent
    from tests.actors.test_climb_episode import VECTOR
    from tests.npu_pool.harness_support import SMALL_BYTES

    out = tmp_path / "climb"
    plan = {**plan_entry(2, [0], 0), "operators": ["bench/learning/pilot_tasks/p1_Expm1.py"]}
    with OpenAITestServer() as server:
        server.responder = ScriptedAgent([VECTOR, "no code here"])
        settings = load_settings(None, {
            "harness": {"backend": "npu-twin", "fit_max_bytes": SMALL_BYTES, "correctness_trials": 2,
                        "timed_trials": 3, "compile_baseline": False},
            "llm": {"base_url": server.base_url, "model": server.model, "candidate_format": "kernel",
                    "timeout_s": 30.0, "max_retries": 1, "seed": 0},  # as bench_settings sets it
            "memory": {"uri": str(tmp_path / "unused")}})
        seeded = LearningBenchmark(settings, out).seed_bank()
        first = first_kernels(settings, out, plan, seeded)["p1_Expm1"]
        assert first["feasible"] and first["rung"] == "first" and first["origin"].startswith("archived")
        path = Path(__file__).resolve().parents[2] / plan["operators"][0]
        result = refine_operator(settings, out, "none", 0, path, first, 2, seeded)
        server.responder = ScriptedAgent([VECTOR, "no code here"])
        other = refine_operator(settings, out, "none", 1, path, first, 2, seeded)
    # another seed samples the model with other request seeds (the 2026-12-06 pilot's seeds shared them)
    seeds = {s: [a["sampling_seed"] for a in map(json.loads, (out / "runs" / f"none-s{s}" / "p1_Expm1.attempts.jsonl")
                                                  .read_text().splitlines()) if a["stage"] == "refine"] for s in (0, 1)}
    assert len(seeds[0]) == 2 and None not in seeds[0] and set(seeds[0]).isdisjoint(seeds[1])
    assert other["refinements"] == result["refinements"]  # the same scripted replies: the same verdicts
    assert [(r["iteration"], r["shown"], r["gate"]) for r in result["refinements"]] == [(2, "bare", "ok"),
                                                                                      (3, "bare", "no_code")]
    assert result["best_over_first"] > 100 and result["first_rung"] == "first"
    assert not (out / "runs" / "none-s0" / "p1_Expm1.bank-before").exists()  # finished: its bank copy is gone
    again = refine_operator(settings, out, "none", 0, path, first, 2, seeded)  # finished operators are skipped
    assert again == result
