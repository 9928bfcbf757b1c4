"""The time-budget benchmark's bookkeeping (bench/budget.py) on run folders as `evokernel run` writes
them: which rows have finished, a row's wall time over its sessions, the headline; and the defaults'
measurement (bench/budget_defaults.py) on the published records."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path

from actors.messages import Attempt, EpisodeResult
from bench import budget as bench
from bench.budget_defaults import main as defaults_main
from bench.budget_table import markdown
from launch.run_summary import RunSummary


def stamp(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat()


def write_row(out: Path, row: str, operators: list[EpisodeResult], attempts: list[Attempt], *, planned: list[str],
              finished: bool = True, budget: dict | None = None, discarded: list[Attempt] = ()) -> None:
    folder = out / row
    folder.mkdir(parents=True)
    RunSummary(run_id=row, planned=planned, operators=operators, finished_at=stamp(0) if finished else None,
               budget=budget).write(folder)
    (folder / "attempts.jsonl").write_text("".join(a.model_dump_json() + "\n" for a in attempts))
    if discarded:
        (folder / "attempts.discarded.jsonl").write_text("".join(a.model_dump_json() + "\n" for a in discarded))


def attempt(task: str, iteration: int, end: float, wall: float) -> Attempt:
    return Attempt(run_id="r", task=task, iteration=iteration, stage="draft", gate="compile", wall_s=wall,
                   timestamp=stamp(end))


def test_a_rows_wall_time_counts_one_uninterrupted_run(tmp_path):
    out = tmp_path / "bench"
    t0 = 1_800_000_000.0
    # Session 1: 100 s start-up, two attempts, stopped at t0+400 with a third attempt cut short
    # (the resume set it aside); session 2: 60 s start-up, then the rest, to t0+1000.
    kept = [attempt("a", 1, t0 + 200, 100), attempt("a", 2, t0 + 300, 100), attempt("b", 1, t0 + 760, 100)]
    write_row(out, "full", [EpisodeResult(task="a"), EpisodeResult(task="b")], kept, planned=["a", "b"],
              discarded=[attempt("b", 1, t0 + 390, 90)])
    (out / "segments.json").write_text(json.dumps({"full": [{"start": t0, "end": t0 + 400}, {"start": t0 + 600,
                                                                                             "end": t0 + 1000}]}))
    wall = bench.wall_s(out, "full")
    assert wall["sessions_wall_s"] == 800 and wall["discarded_attempts_wall_s"] == 90
    assert wall["first_startup_s"] == 100 and wall["later_startups_s"] == 60
    assert wall["wall_s"] == 800 - 90 - 60


def test_a_resumed_budget_row_gets_back_the_time_of_the_attempts_resumes_redo(tmp_path):
    """The run's clock charges attempts a resume sets aside; full's wall time does not count them, so
    the budget row's resume is given them back: those set aside already, and those of the operator the
    stop interrupted (the resume sets them aside as it starts). A continued (budget-stopped) operator's
    attempts stay charged: they are kept."""
    out = tmp_path / "bench"
    t0 = 1_800_000_000.0
    ops = [EpisodeResult(task="a", stopped_by="budget"), EpisodeResult(task="b", stopped_by="interrupted")]
    write_row(out, "budget", ops, [attempt("a", 1, t0 + 100, 100), attempt("b", 1, t0 + 160, 60),
                                   attempt("b", 2, t0 + 200, 40)],
              planned=["a", "b"], finished=False, budget={"hours": 1.0}, discarded=[attempt("c", 1, t0 + 50, 30)])
    plan = {"budget_hours": 1.0}
    assert bench.redone_attempts_s(out / "budget") == 30 + 60 + 40
    command = bench.row_command(out, "budget", plan)
    assert command[command.index("--resume") + 1] == str(out / "budget")
    assert float(command[command.index("--hours") + 1]) == round(1.0 + 130 / 3600, 4)
    write_row(out, "stops", ops, [], planned=["a", "b"], finished=False)
    assert "--hours" not in bench.row_command(out, "stops", plan)


def test_rows_finish_by_their_own_summary(tmp_path):
    out = tmp_path / "bench"
    ops = [EpisodeResult(task="a", feasible=True, speedup_vs_eager=1.5), EpisodeResult(task="b", feasible=True,
                                                                                        speedup_vs_eager=0.5)]
    write_row(out, "full", ops, [], planned=["a", "b", "c"])  # c never ended: not finished
    write_row(out, "budget", ops[:1], [], planned=["a", "b", "c"], budget={"hours": 1.0})  # ended at its budget
    write_row(out, "stops", ops, [], planned=["a", "b"], finished=False)
    assert not bench.finished(out / "full") and bench.finished(out / "budget") and not bench.finished(out / "stops")
    lost = EpisodeResult(task="c", stopped_by="infra", error="lost with its node: ...")
    write_row(out, "again", [*ops, lost], [], planned=["a", "b", "c"])  # every operator listed, one not judged
    assert not bench.finished(out / "again")
    (out / "plan.json").write_text(json.dumps({"rows": list(bench.ROWS), "budget_hours": 1.0}))
    table = bench.table(out)
    assert table["headline"]["bench"] == "budget" and not table["complete"] and "target_met" not in table["headline"]
    assert (table["headline"]["full_feasible"], table["headline"]["full_fast_1"]) == (2, 1)
    assert (table["headline"]["budget_feasible"], table["headline"]["budget_fast_1"]) == (1, 1)
    assert table["headline"]["full_median_speedup"] == 1.0


def test_the_published_table_says_what_each_row_did_with_each_operator(tmp_path):
    out = tmp_path / "bench"
    t0 = 1_800_000_000.0
    full = [EpisodeResult(task="a", feasible=True, speedup_vs_eager=1.5), EpisodeResult(task="b")]
    write_row(out, "full", full, [attempt("a", 1, t0 + 10, 5), attempt("a", 2, t0 + 20, 5), attempt("b", 1, t0 + 30, 5)],
              planned=["a", "b"])
    write_row(out, "budget", full[:1], [attempt("a", 1, t0 + 10, 5)], planned=["a", "b"], budget={"hours": 0.01})
    write_row(out, "stops", [full[0], EpisodeResult(task="b", stopped_by="no_compile")], [], planned=["a", "b"])
    plan = {"rows": list(bench.ROWS), "budget_hours": 0.01, "slice": ["a", "b"], "suite": "suites/cpu",
            "slice_rule": "every fourth", "iterations": 2, "seed": 0, "commit": "0123456789abcdef", "budget_share": 1 / 3}
    (out / "plan.json").write_text(json.dumps(plan))
    table = bench.table(out)
    assert table["operators"]["a"]["full"] == {"feasible": True, "speedup": 1.5, "attempts": 2, "stopped_by": "iterations"}
    assert "b" not in {task for task, rows in table["operators"].items() if "budget" in rows}  # never ended there
    text = markdown(table)
    assert "| full | 1 | 1 | 1.5 | 3 |" in text and "budget row: --hours 0.01 (0.33 of" in text
    assert "| a | 1.50x, 2 att., iterations | 1.50x, 1 att., iterations | 1.50x, 0 att., iterations |" in text
    assert "| b | -, 1 att., iterations | not ended | -, 0 att., no_compile |" in text
    assert "Target (budget >= 95% of full's feasible and fast_1): met." in text


def test_a_run_told_to_stop_before_the_budget_row_starts_nothing_after_the_full_row(tmp_path, capsys):
    import signal

    out = tmp_path / "bench"
    write_row(out, "full", [EpisodeResult(task="a")], [attempt("a", 1, 1_800_000_100.0, 50)], planned=["a"])
    (out / "segments.json").write_text(json.dumps({"full": [{"start": 1_800_000_000.0, "end": 1_800_000_200.0}]}))
    (out / "plan.json").write_text(json.dumps({"rows": list(bench.ROWS), "budget_hours": None, "budget_share": 1 / 3}))
    handlers = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    try:
        assert bench.run(out, stop_before="budget") == 0
    finally:
        signal.signal(signal.SIGINT, handlers[0])
        signal.signal(signal.SIGTERM, handlers[1])
    assert "stopped before the budget row" in capsys.readouterr().err
    assert not (out / "budget").exists() and json.loads((out / "plan.json").read_text())["budget_hours"] is None


def test_the_slice_is_every_fourth_task_of_the_suite():
    tasks = bench.slice_tasks()
    assert len(tasks) == 24 and tasks[:3] == ["1_Add", "5_GELU", "9_LeakyReLU"] and tasks[-1] == "1_GemmBiasReLU"


def test_the_defaults_are_what_the_published_records_say(capsys):
    defaults_main([])
    measured = json.loads(capsys.readouterr().out)
    assert measured["bench"] == "budget_defaults" and measured["attempts"] > 4000
    at_10 = measured["refine_gains"]["0.10"]
    assert at_10["stop_after_k"]["4"]["gains_lost"] == [] and at_10["stop_after_k"]["3"]["gains_lost"]
    assert not [g for g in measured["refine_gains"]["feasible_gains"] if 0.098 < g < 0.212]
    rates = measured["drafts"]["next_draft_feasible_by_state"]
    assert rates["first"][2] > rates["compiled"][2] > rates["uncompiled_1"][2] > rates["uncompiled_4"][2]


def test_the_budgets_rates_are_the_measured_ones(capsys):
    import pytest

    from launch.budget_worth import DRAFT_RATES, RECORDED_GAINS, REFINE_RATES

    defaults_main([])
    measured = json.loads(capsys.readouterr().out)
    rates = measured["drafts"]["next_draft_feasible_by_state"]
    for state, rate in DRAFT_RATES.items():
        assert rate == pytest.approx(rates[state][2], abs=0.0006), state
    after = measured["refine_gains"]["0.10"]["next_gains_after_s_without"]
    assert REFINE_RATES["after_gain"] == pytest.approx(after["0"][1] / after["0"][0], abs=0.001)
    none = [after[s] for s in after if s != "0"]
    assert REFINE_RATES["after_none"] == pytest.approx(sum(g for _, g in none) / sum(n for n, _ in none), abs=0.001)
    assert RECORDED_GAINS == [g for g in measured["refine_gains"]["feasible_gains"] if g > 0.10]


def test_pause_after_operator_waits_for_the_running_operator_to_end(tmp_path):
    """`budget_ctl.sh pause --after-operator` stops the driver only once summary.json records one more
    ended operator (a resume would redo an interrupted one from its first attempt); a resume that has
    just started, and rewrote summary.json without the operator it reruns, has not ended one."""
    import signal
    import subprocess
    import threading
    import time

    summary = tmp_path / "clone" / "runs" / "budget-bench" / "full" / "summary.json"
    summary.parent.mkdir(parents=True)
    summary.write_text('{\n "operators": [\n  {"stopped_by": "iterations"},\n  {"stopped_by": "interrupted"}\n ]\n}\n')
    # stands in for the driver: it records when SIGTERM reached it, then exits as a paused run does
    marker = tmp_path / "terminated_at"
    driver = subprocess.Popen([sys.executable, "-c", (
        "import signal, sys, time, pathlib\n"
        f"def stop(*_): pathlib.Path({str(marker)!r}).write_text(str(time.time())); sys.exit(130)\n"
        "signal.signal(signal.SIGTERM, stop)\n"
        "while True: time.sleep(0.1)\n")])
    # reaped as soon as it exits (as init reaps the real, detached driver): a zombie would still answer kill -0
    threading.Thread(target=driver.wait, daemon=True).start()
    (tmp_path / "bench.pid").write_text(str(driver.pid))
    script = Path(__file__).resolve().parents[2] / "bench" / "budget_ctl.sh"
    env = {"PATH": "/usr/bin:/bin", "BENCH_ROOT": str(tmp_path), "WAIT_S": "60"}
    pause = subprocess.Popen(["bash", str(script), "pause", "--after-operator"], env=env,
                             stdout=subprocess.PIPE, text=True)
    try:
        time.sleep(1)
        # the resume, starting, drops the interrupted operator (it runs again): one fewer, nothing ended
        summary.write_text('{\n "operators": [\n  {"stopped_by": "iterations"}\n ]\n}\n')
        time.sleep(7)  # the script polls every 5 s: it has looked at least once and must still wait
        assert not marker.exists() and driver.returncode is None
        operator_ended_at = time.time()
        summary.write_text('{\n "operators": [\n  {"stopped_by": "iterations"},\n  {"stopped_by": "iterations"}\n ]\n}\n')
        output, _ = pause.communicate(timeout=60)
        assert "ctl: paused" in output
        assert float(marker.read_text()) >= operator_ended_at
    finally:
        if driver.poll() is None:
            driver.send_signal(signal.SIGKILL)
        driver.wait()
