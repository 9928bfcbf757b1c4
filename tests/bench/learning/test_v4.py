"""The learning benchmark v4 (issue 41.6), without a model: its targets and verdict, the value arm's
cold rates and greedy frozen decision, v3's screening taken whole, the load-proof limits, and a
running folder's state checkpointed into bench/results/ and resumed from there."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from actors.messages import EpisodeResult
from bench.learning.archive import unpack
from bench.learning.checkpoint import checkpoint, drop_checkpoints
from bench.learning.cli import design_settings, main
from bench.learning.plan import (
    LOAD_PROOF,
    TARGETS,
    arm_memory,
    check_same_plan,
    parse_args,
    plan_in,
    plan_of,
)
from bench.learning.progress import line, pace_s, progress
from bench.learning.reuse import reusable_screening
from bench.learning.screening import arm_memories, cold_rates
from bench.learning.summary import evaluate

REPOSITORY = Path(__file__).resolve().parents[3]
SUITE = REPOSITORY / "suites" / "cpu" / "level1"


def _arm(rates: dict[str, float], compile_errors: int) -> dict:
    return {"pass1_by_operator": rates, "compile_errors": compile_errors}


def test_v4_targets_c_a_lift_of_five_points_without_a_test_and_the_twin_thirty_at_p_005():
    ops = [f"op{i}" for i in range(10)]
    none = _arm({op: 0.4 for op in ops}, 10)
    # C: +6 points on two operators only (not significant) meets the target when compile errors do not rise
    lifted = _arm({op: 0.4 + (0.3 if i < 2 else 0.0) for i, op in enumerate(ops)}, 10)
    _, verdict = evaluate("cpu", {"value": lifted, "none": none}, "v4")
    assert verdict["primary"] == "value_vs_none" and verdict["target_points"] == 0.05 and not verdict["target_needs_p"]
    assert not verdict["significant"] and verdict["target_met"]
    _, more_errors = evaluate("cpu", {"value": _arm(lifted["pass1_by_operator"], 11), "none": none}, "v4")
    assert not more_errors["target_met"] and not more_errors["compile_errors_treated_le_none"]
    _, same = evaluate("cpu", {"value": none, "none": none}, "v4")
    assert not same["target_met"]  # value at none's rate: no harm, but not the +5 asked
    # the twin: +31.5 points on every operator, significant
    twin_none = _arm({op: 0.0 for op in ops}, 150)
    twin_value = _arm({op: 0.3 + 0.01 * (i % 4) for i, op in enumerate(ops)}, 100)
    _, twin = evaluate("npu-twin", {"value": twin_value, "none": twin_none}, "v4")
    assert twin["significant"] and twin["target_met"] and twin["target_needs_p"]
    _, two_only = evaluate("npu-twin", {"value": _arm({op: (1.0 if i < 4 else 0.0) for i, op in enumerate(ops)}, 100),
                                        "none": twin_none}, "v4")
    assert two_only["difference"] >= 0.3 and not two_only["significant"] and not two_only["target_met"]
    assert TARGETS["v3", "cpu"].name == "value_vs_similarity"  # v3's verdicts stay as published


def test_the_value_arm_gets_screenings_cold_rates_per_family_and_decides_greedily_when_frozen(tmp_path):
    pool = [SUITE / f"{stem}.py" for stem in ("4_ReLU", "7_Sigmoid", "18_Softmax")]
    screening = {"outcomes": {"4_ReLU": [True, True, False], "7_Sigmoid": [False, True, False, False, False, True],
                              "18_Softmax": [False, False, False]}}
    rates = cold_rates({"pool": pool}, screening, "npu-twin")
    assert rates == {"npu-twin/elementwise": [4, 9], "npu-twin/softmax_norm": [0, 3]}
    plan = {"design": "v4", "backend": "npu-twin", "arms": ["none", "value"], "pool": pool}
    learning, evaluation = arm_memories(plan, screening, tmp_path)
    rates |= {"npu-twin/elementwise/4_ReLU": [2, 3], "npu-twin/elementwise/7_Sigmoid": [2, 6],
              "npu-twin/softmax_norm/18_Softmax": [0, 3]}  # each operator's own (issue 54)
    assert learning["none"] == evaluation["none"] == {"retrieval": "none"}
    assert learning["value"] == {"retrieval": "value", "cold_rates": rates, "shipped_rates": False}
    assert evaluation["value"] == {"retrieval": "value", "cold_rates": rates, "slot_greedy": True,
                                   "shipped_rates": False}
    assert json.loads((tmp_path / "cold_rates.json").read_text()) == rates
    from launch.config import load_settings

    memory = arm_memory(load_settings(None, {}), evaluation["value"], tmp_path / "bank", 100)
    assert memory.slot_greedy and memory.cold_rates["npu-twin/elementwise"] == (4, 9) and not memory.shipped_rates
    v3_learning, v3_eval = arm_memories({**plan, "design": "v3"}, screening, tmp_path / "v3")
    assert v3_learning["value"] == v3_eval["value"] == {"retrieval": "value"}


def test_v4_takes_a_finished_v3_screening_whole_with_the_drafts_it_borrowed(tmp_path):
    """A v3 folder whose screening finished lends every draft its screening.json holds, stage 2
    included, pass by pass: what it borrowed from the folder before it as well."""
    earlier = tmp_path / "v3"
    earlier.mkdir()
    (earlier / "plan.json").write_text(json.dumps({"design": "v3", "backend": "cpu", "suite": "suites/cpu", "seed": 0,
                                                   "rule": {"drafts": 3, "extra_drafts": 3, "floor_admitted": False}}))
    outcomes = {"4_ReLU": [True, True, True], "7_Sigmoid": [False, True, False, False, True, False],
                "5_GELU": [False, False], "99_NotInThePool": [True, True, True]}
    (earlier / "screening.json").write_text(json.dumps({"outcomes": outcomes}))
    plan = plan_of(parse_args(["--design", "v4", "--pool", "4_ReLU,7_Sigmoid,5_GELU"]))
    passes = reusable_screening(earlier, plan, 0)
    assert passes == {0: {"4_ReLU": True, "7_Sigmoid": False}, 1: {"4_ReLU": True, "7_Sigmoid": True},
                      2: {"4_ReLU": True, "7_Sigmoid": False}, 3: {"7_Sigmoid": False}, 4: {"7_Sigmoid": True},
                      5: {"7_Sigmoid": False}}  # GELU's two drafts of three cannot be placed in passes: drafted anew
    (earlier / "plan.json").write_text(json.dumps({"design": "v2", "backend": "cpu", "suite": "suites/cpu", "seed": 0,
                                                   "rule": {"drafts": 3, "extra_drafts": 3, "floor_admitted": False}}))
    with pytest.raises(SystemExit, match="design 'v2'"):
        reusable_screening(earlier, plan, 0)


def test_v4_records_its_design_and_sets_limits_that_load_cannot_trip(tmp_path):
    args = parse_args(["--design", "v4", "--backend", "cpu", "--set", "harness.run_timeout_s=7000"])
    plan = plan_of(args)
    check_same_plan(tmp_path, plan)
    assert json.loads((tmp_path / "plan.json").read_text())["design"] == "v4" and plan_in(tmp_path)["design"] == "v4"
    with pytest.raises(SystemExit, match="another plan"):  # a v3 command cannot resume a v4 folder
        check_same_plan(tmp_path, plan_of(parse_args(["--backend", "cpu"])))
    settings = design_settings(args)
    assert settings.llm.timeout_s == 7200 and settings.harness.compile_timeout_s == 3600
    assert settings.harness.call_time_limit_min_s == 300 and settings.local_llm.startup_timeout_s == 3600
    assert settings.harness.run_timeout_s == 7000  # a --set given on the command line wins
    assert all(entry.split("=")[0].split(".")[0] in ("llm", "harness", "local_llm") for entry in LOAD_PROOF)
    assert design_settings(parse_args(["--backend", "cpu"])).llm.timeout_s == 120  # v3 as it ran


def test_the_v4_dry_run_compares_value_with_none_in_both_domains(capsys):
    assert main(["--dry-run", "--design", "v4", "--backend", "cpu", "--arms", "none,value"]) == 0
    cpu = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert cpu["design"] == "v4" and cpu["primary"] == "value_vs_none" and cpu["evaluation_attempts_max"] == 2 * 24 * 8


def _running_folder(out: Path) -> None:
    """A v4 folder in the middle of learn-value: learn-none finished, learn-value's live bank and its
    copy after its first operator, an evaluation pass's attempts with a line being written."""
    plan = plan_of(parse_args(["--design", "v4", "--backend", "cpu", "--arms", "none,value", "--pool", "4_ReLU"]))
    check_same_plan(out, plan)
    (out / "screening.json").write_text(json.dumps({"outcomes": {"4_ReLU": [True, False, True]}, "heldout": ["4_ReLU"],
                                                    "curriculum": ["7_Sigmoid", "9_LeakyReLU"]}))
    done = {"finished_at": "2026-11-28T22:00:00+00:00", "error": None}
    for name, operators, extra in (("learn-none", ["7_Sigmoid", "9_LeakyReLU"], done), ("learn-value", ["7_Sigmoid"], {})):
        run = out / "arms" / name
        (run / "report").mkdir(parents=True)
        (run / "report" / "report.html").write_text("<html>")
        results = [EpisodeResult(task=t, feasible=False, attempts=6, stopped_by="iterations").model_dump() for t in operators]
        (run / "summary.json").write_text(json.dumps({"operators": results, **extra}))
        (run / "attempts.jsonl").write_text("".join(json.dumps({"task": t, "gate": "compile"}) + "\n" for t in operators)
                                            + ('{"task": "9_Leak' if name == "learn-value" else ""))
    for bank in ("seeded", "learn-none", "learn-value", "learn-value.after-1"):
        (out / "banks" / bank).mkdir(parents=True)
        (out / "banks" / bank / "data.lance").write_text(bank)
    (out / "banks" / "learn-value.after-1.json").write_text(json.dumps({"operators": ["7_Sigmoid"]}))
    (out / "banks" / "learn-value.after-2.partial").mkdir()


def test_a_running_folder_is_checkpointed_marked_in_progress_and_resumable_from_the_archive(tmp_path):
    out, results = tmp_path / "runs" / "learning-v4-cpu", tmp_path / "results"
    out.mkdir(parents=True)
    _running_folder(out)
    state = progress(out)
    assert state["step"] == "learning" and state["learning"] == {"none": "2/2 done", "value": "1/2"}
    assert line(state) == "v4 cpu: learning; learning (operators) none 2/2 done, value 1/2; evaluation 0/16 drafts"
    target = results / "2026-11-28-m-v4-cpu-in-progress"
    manifest = checkpoint(out, target, "runs/learning-v4-cpu")
    recorded = json.loads((target / "raw.json").read_text())
    assert recorded["in_progress"] and recorded["progress"] == state and not (target / "summary.json").exists()
    files = unpack(target, tmp_path / "unpacked")
    assert manifest["files"] == len(files)
    assert "banks/learn-value/data.lance" not in files  # the live bank: a resume takes the copy after operator 1
    assert {"banks/learn-value.after-1/data.lance", "banks/learn-value.after-1.json", "banks/learn-none/data.lance",
            "banks/seeded/data.lance", "plan.json", "screening.json", "arms/learn-value/summary.json"} <= set(files)
    assert not any("partial" in f or "/report/" in f for f in files)
    kept = (tmp_path / "unpacked" / "arms" / "learn-value" / "attempts.jsonl").read_text()
    assert kept.endswith("\n") and "9_Leak" not in kept  # the line being written is left out
    assert plan_in(tmp_path / "unpacked")["design"] == "v4" and progress(tmp_path / "unpacked")["learning"] == state["learning"]
    # a published table is never overwritten by a checkpoint; the final table removes the checkpoint
    (results / "published").mkdir()
    (results / "published" / "summary.json").write_text("{}")
    with pytest.raises(SystemExit, match="published table"):
        checkpoint(out, results / "published")
    assert drop_checkpoints(results, Path("/elsewhere/learning-v4-cpu"), "v4", "npu-twin") == []
    assert drop_checkpoints(results, Path("/elsewhere/learning-v4-cpu"), "v4", "cpu") == [target]
    assert not target.exists() and (results / "published").exists()


def test_the_benchmark_runs_from_any_directory_by_its_path(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    run = subprocess.run([sys.executable, str(REPOSITORY / "bench" / "learning"), "--dry-run", "--design", "v4",
                          "--backend", "npu-twin", "--arms", "none,value"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert json.loads(run.stdout.strip().splitlines()[-1])["primary"] == "value_vs_none"


def test_a_draft_the_machine_failed_to_judge_is_drawn_again_not_counted(tmp_path, monkeypatch):
    """An episode error (a sandbox server that could not start on a starved machine) is no verdict:
    the pass drafts that operator again (resumed: the judged ones kept), a task that did not load is
    left out, and a pass whose every operator was judged is skipped."""
    import bench.learning.evaluation as evaluation

    def write(run: Path, operators: list[EpisodeResult]) -> None:
        run.mkdir(parents=True, exist_ok=True)
        (run / "summary.json").write_text(json.dumps({"run_id": "p", "finished_at": "2026-11-28T22:00:00+00:00",
                                                      "operators": [op.model_dump() for op in operators]}))

    run = tmp_path / "eval-value-d0"
    judged = EpisodeResult(task="7_Sigmoid", feasible=True, attempts=1, stopped_by="feasible")
    crashed = EpisodeResult(task="9_LeakyReLU", feasible=False, attempts=0, stopped_by="error",
                            error="RuntimeError: the warm sandbox server did not start: no output")
    unloadable = EpisodeResult(task="5_GELU", feasible=False, attempts=0, stopped_by="error", error="task load: timeout")
    write(run, [judged, crashed, unloadable])
    assert evaluation.unjudged(run) == ["9_LeakyReLU"]
    assert evaluation.draft_outcomes(run) == {"7_Sigmoid": True}  # never counted as the model's failure

    rounds = []

    class Campaign:
        @classmethod
        def resume(cls, settings, run_dir):
            return cls(), []

        async def run(self, tasks):  # the crashed operator fails once more, then gets its verdict
            rounds.append(len(rounds))
            redrawn = EpisodeResult(task="9_LeakyReLU", feasible=False, attempts=1, stopped_by="iterations")
            write(run, [judged, crashed if len(rounds) == 1 else redrawn, unloadable])

    monkeypatch.setattr(evaluation, "FrozenCampaign", Campaign)
    monkeypatch.setattr(evaluation, "bank_digest", lambda bank, settings: "same")
    monkeypatch.setattr(evaluation, "draft_settings", lambda *args: None)
    monkeypatch.setattr(evaluation.time, "sleep", lambda s: None)
    assert evaluation.run_draft_pass(None, run, tmp_path / "bank", {}, [], 100, "p")
    assert rounds == [0, 1] and evaluation.unjudged(run) == []
    assert evaluation.draft_outcomes(run) == {"7_Sigmoid": True, "9_LeakyReLU": False}
    assert not evaluation.run_draft_pass(None, run, tmp_path / "bank", {}, [], 100, "p")  # every operator judged


def test_the_progress_line_gives_the_latest_pace_and_what_is_left_at_it(tmp_path):
    """The pace is the median gap between the step's latest attempts (a pause is one long gap the
    median passes over); in the evaluation the line says about how long is left at it."""
    from datetime import UTC, datetime, timedelta

    start = datetime(2026, 11, 29, 3, 0, tzinfo=UTC)
    stamps = [start + timedelta(seconds=30 * i) for i in range(12)] + [start + timedelta(hours=2, seconds=30 * i)
                                                                       for i in range(12)]
    for n, run in enumerate(("eval-none-d0", "eval-value-d0")):  # interleaved passes: one timeline
        (tmp_path / run).mkdir()
        (tmp_path / run / "attempts.jsonl").write_text(
            "".join(json.dumps({"task": "t", "timestamp": t.isoformat()}) + "\n" for t in stamps[n::2]) + '{"task": "cu')
    assert pace_s([tmp_path / "eval-none-d0", tmp_path / "eval-value-d0"]) == 30.0
    assert pace_s([tmp_path / "nothing"]) is None
    state = {"design": "v4", "backend": "cpu", "step": "evaluation", "learning": {"none": "12/12 done"},
             "evaluation_drafts": 264, "evaluation_planned": 384, "pace_s": 30.0}
    assert line(state).endswith("evaluation 264/384 drafts; lately 30 s an attempt, about 1.0 h left at that pace")


def test_in_the_learning_step_the_line_counts_the_operators_left_at_their_mean_attempts(tmp_path):
    """Learning passes take a varying number of attempts an operator: what is left is the passes'
    operators left at the mean so far, then every evaluation draft (one attempt each)."""
    (tmp_path / "plan.json").write_text(json.dumps({"design": "v5", "backend": "npu-twin", "arms": ["none", "value"],
                                                    "eval_drafts": 2}))
    (tmp_path / "screening.json").write_text(json.dumps({"heldout": ["h1", "h2", "h3"], "curriculum": ["c1", "c2", "c3"]}))
    for run, ops, attempts, finished in (("learn-none", ["c1", "c2", "c3"], 7, True), ("learn-value", ["c1"], 5, False)):
        (tmp_path / "arms" / run).mkdir(parents=True)
        (tmp_path / "arms" / run / "summary.json").write_text(json.dumps(
            {"operators": [{"task": op, "stopped_by": "budget"} for op in ops], "finished_at": "x" if finished else None}))
        (tmp_path / "arms" / run / "attempts.jsonl").write_text(
            "".join(json.dumps({"task": "c", "timestamp": f"2026-12-03T10:{i:02d}:00+00:00"}) + "\n"
                    for i in range(attempts)) + '{"task": "c')  # a line being written is not counted
    state = progress(tmp_path)
    # 12 attempts over 4 operators done: 2 operators left at 3 each, then 3 x 2 x 2 = 12 drafts
    assert (state["step"], state["attempts_left"], state["pace_s"]) == ("learning", 18, 60.0)
    assert line(state).endswith("lately 60 s an attempt, about 0.3 h left at that pace (18 attempts, the evaluation's included)")
    for run in ("learn-none", "learn-value"):  # no operator done yet: no mean, no estimate
        (tmp_path / "arms" / run / "summary.json").write_text(json.dumps({"operators": []}))
    assert progress(tmp_path)["attempts_left"] is None and "left" not in line(progress(tmp_path))


def test_a_pilot_folder_is_read_as_drafts_of_its_arms(tmp_path):
    """A pilot (bench/learning/pilot.py) has no screening and no learning pass: its line counts
    the arms' drafts against the plan's, not "screening"."""
    (tmp_path / "plan.json").write_text(json.dumps({"design": "pilot", "backend": "npu-twin", "arms": ["none", "rung"],
                                                    "pool": ["p1", "p2", "p3"], "eval_drafts": 2}))
    for run, ops in (("eval-none-d0", ["p1", "p2", "p3"]), ("eval-rung-d0", ["p1"])):
        (tmp_path / "arms" / run).mkdir(parents=True)
        (tmp_path / "arms" / run / "summary.json").write_text(json.dumps(
            {"operators": [{"task": op, "stopped_by": "budget"} for op in ops] + [{"task": "p9", "stopped_by": "interrupted"}]}))
    state = progress(tmp_path)
    assert (state["step"], state["evaluation_drafts"], state["evaluation_planned"]) == ("drafting", 4, 12)
    assert line(state) == "pilot npu-twin: drafting, 4/12 drafts"
