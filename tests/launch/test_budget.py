"""The time budget and the stop rules on scripted runs (issue 67): `evokernel run` end to end with
the loopback LLM server scripting what each operator's candidates are (tests/launch/budget_agent.py),
the real CPU harness, a real bank, where the right order of attempts is known."""

from __future__ import annotations

import json
import time

import pytest

from launch.budget import TurnQueue
from launch.budget_worth import DRAFT_RATES, RunRates, expected_gain
from launch.cli import main
from tests.actors.openai_server import OpenAITestServer
from tests.launch.budget_agent import PlannedAgent

FAST_HARNESS = ["--set", "harness.compile_baseline=false", "--set", "harness.timed_trials=5",
                "--set", "harness.warmup_trials=1", "--set", "harness.correctness_trials=2",
                "--set", "harness.profile_input_sets=1", "--set", "llm.candidate_format=kernel"]
TASKS = "4_ReLU.py,7_Sigmoid.py,8_Tanh.py"


def run(server: OpenAITestServer, tmp_path, *extra: str, settings: tuple[str, ...] = (), tasks: str = TASKS,
        ray: bool = False) -> int:
    return main([*FAST_HARNESS, *settings, "run", *([] if ray else ["--no-ray"]), "--tasks", tasks,
                 "--llm-base-url", server.base_url, "--llm-model", server.model, "--memory", str(tmp_path / "bank"),
                 "--out", str(tmp_path / "run"), "--backend", "cpu", *extra])


def summary(tmp_path) -> dict:
    return json.loads((tmp_path / "run" / "summary.json").read_text())


def attempts(tmp_path) -> list[dict]:
    return [json.loads(line) for line in (tmp_path / "run" / "attempts.jsonl").read_text().splitlines()]


def log_events(err: str, event: str) -> list[dict]:
    found = []
    for line in err.splitlines():
        if line.startswith("{") and f'"event": "{event}"' in line:
            found.append(json.loads(line))
    return found


def test_plateau_and_no_compile_stop_operators_and_say_why(tmp_path, capsys):
    agent = PlannedAgent({"4_ReLU": ["broken"] * 6,
                          "8_Tanh": ["slow:8", "slow:2", "slow:16", "slow:16", "slow:16", "slow:16"]})
    with OpenAITestServer() as server:
        server.responder = agent
        run(server, tmp_path, "--iterations", "6", tasks="4_ReLU.py,8_Tanh.py",
            settings=("--set", "episode.plateau_refinements=2", "--set", "episode.uncompiled_drafts=3",
                      "--set", "memory.retrieval=none"))
    ops = {op["task"]: op for op in summary(tmp_path)["operators"]}
    # ReLU: three drafts, none compiled, and with retrieval none the memory offers nothing else.
    assert ops["4_ReLU"]["stopped_by"] == "no_compile" and ops["4_ReLU"]["attempts"] == 3
    assert ops["4_ReLU"]["stop_detail"] == "3 drafts, none compiled; the memory offers nothing it has not been shown"
    # Tanh: feasible at once, a 4x gain, then two refinements that lost: the plateau after 4 attempts.
    assert ops["8_Tanh"]["stopped_by"] == "plateau" and ops["8_Tanh"]["attempts"] == 4 and ops["8_Tanh"]["feasible"]
    assert ops["8_Tanh"]["stop_detail"].startswith("the last 2 refinements gained no more than 10% over the best kernel")
    assert agent.order == [("4_ReLU", "draft")] * 3 + [("8_Tanh", "draft")] + [("8_Tanh", "refine")] * 3
    err = capsys.readouterr().err
    assert [(e["task"], e["rule"]) for e in log_events(err, "operator_stop")] == [("4_ReLU", "no_compile"),
                                                                                  ("8_Tanh", "plateau")]


def test_the_budget_drafts_where_drafts_compile_before_where_they_never_did(tmp_path, capsys):
    """Three elementwise operators (the memory rates their family alike): ReLU's drafts never compile,
    Sigmoid's compile but compute wrong before one passes, Tanh passes at once. Every operator gets its
    first draft first; then Sigmoid, whose draft compiled, drafts again before ReLU does."""
    agent = PlannedAgent({"4_ReLU": ["broken"] * 8, "7_Sigmoid": ["wrong", "wrong", "slow:2"] + ["slow:8"] * 5,
                          "8_Tanh": ["slow:4"] + ["slow:8"] * 7})
    with OpenAITestServer() as server:
        server.responder = agent
        run(server, tmp_path, "--iterations", "4", "--hours", "1", settings=("--set", "episode.uncompiled_drafts=0",
                                                                              "--set", "episode.plateau_refinements=0"))
    order = agent.order
    assert order[:3] == [("4_ReLU", "draft"), ("7_Sigmoid", "draft"), ("8_Tanh", "draft")]
    assert order.index(("7_Sigmoid", "draft"), 2) < order.index(("4_ReLU", "draft"), 1)
    sigmoid_drafts = [i for i, o in enumerate(order) if o == ("7_Sigmoid", "draft")]
    relu_drafts = [i for i, o in enumerate(order) if o == ("4_ReLU", "draft")]
    assert sigmoid_drafts[2] < relu_drafts[1]  # all three of Sigmoid's drafts before ReLU's second
    err = capsys.readouterr().err
    moved = log_events(err, "operator_moved_down")
    relu = next(e for e in moved if e["task"] == "4_ReLU")
    assert "uncompiled 1 draft(s)" in relu["why"] and relu["next"] == "7_Sigmoid"
    run_summary = summary(tmp_path)
    assert run_summary["budget"]["hours"] == 1 and run_summary["budget"]["moved_down"] >= 2
    assert {op["task"]: op["attempts"] for op in run_summary["operators"]} == {"4_ReLU": 4, "7_Sigmoid": 4, "8_Tanh": 4}
    assert "the time budget (1 h" in err and "bought 12 attempts over 3 operator(s): 2 feasible" in err


def test_the_turn_goes_to_refinements_that_still_gain(tmp_path):
    """Two feasible operators, equally far from eager (their speedups are set, so the harness's timing
    of eager does not decide): the one whose last refinement gained gets the turn, and the stalled
    one's worth is the bar it must stay above; moved down, an operator's state waits in RUN_DIR/turns/."""
    from actors.episode_turns import EpisodeState
    from actors.messages import Attempt, EpisodeResult
    from launch.budget import MOVED_DOWN, Turn

    def state(task: str, latencies: list[float]) -> EpisodeState:
        tried = [Attempt(run_id="r", task=task, iteration=i, stage="draft" if i == 1 else "refine", gate="ok",
                         feasible=True, latency_ms=ms) for i, ms in enumerate(latencies, start=1)]
        return EpisodeState(task=task, attempts=tried, result=EpisodeResult(task=task, feasible=True,
                                                                             speedup_vs_eager=0.3))

    queue = TurnQueue(planned=[], run_dir=tmp_path, hours=1.0, iterations=30)
    stalled = Turn(tmp_path / "7_Sigmoid.py", state("7_Sigmoid", [10.0, 11.0, 10.5]), order=0)
    gaining = Turn(tmp_path / "8_Tanh.py", state("8_Tanh", [10.0, 5.0]), order=1)
    queue.waiting = [stalled, gaining]
    turn = queue.next()
    assert turn is gaining and turn.pace is not None and turn.pace.bar_task == "7_Sigmoid"
    assert turn.pace.bar.why.startswith("refining (2 refinement(s) since a gain)")
    assert queue.returned(turn, turn.state.result.model_copy(update={"stopped_by": MOVED_DOWN}), turn.state)
    assert (tmp_path / "turns" / "8_Tanh.json").is_file() and queue.waiting == [stalled, gaining]
    assert queue.load_state("8_Tanh") == gaining.state
    assert queue.next() is gaining  # still the better: it comes back
    assert not queue.returned(gaining, gaining.state.result, gaining.state)  # it ended: its state goes
    assert not (tmp_path / "turns" / "8_Tanh.json").exists() and queue.next() is stalled


def test_the_run_ends_at_the_budget_and_a_resume_continues_where_it_stopped(tmp_path, capsys):
    agent = PlannedAgent({"4_ReLU": ["slow:1"] + ["slow:2"] * 9}, delay_s=2.0)
    with OpenAITestServer() as server:
        server.responder = agent
        started = time.monotonic()
        run(server, tmp_path, "--iterations", "10", "--hours", "0.004", tasks="4_ReLU.py",
            settings=("--set", "episode.plateau_refinements=0",))
        took = time.monotonic() - started
        first = summary(tmp_path)
        err = capsys.readouterr().err
        [op] = first["operators"]
        assert op["stopped_by"] == "budget" and 1 <= op["attempts"] < 10 and op["feasible"]
        assert first["finished_at"] and not first["interrupted"]
        budget = first["budget"]
        assert budget["hours"] == 0.004 and budget["stopped_by_budget"] == ["4_ReLU"] and budget["attempts"] == op["attempts"]
        assert budget["spent_s"] <= 0.004 * 3600 + 15  # the last attempt started only where one fitted
        assert took < 120
        assert f"continue with  evokernel run --no-ray --resume {tmp_path / 'run'}" in err
        assert (tmp_path / "run" / "turns" / "4_ReLU.json").is_file()
        before = len(attempts(tmp_path))
        assert before == op["attempts"]

        # A resume with a larger budget goes on from the state: iterations continue, nothing is redone.
        code = main([*FAST_HARNESS, "--set", "episode.plateau_refinements=0", "run", "--no-ray",
                     "--resume", str(tmp_path / "run"), "--hours", "1"])
    assert code == 0
    done = summary(tmp_path)
    [op] = done["operators"]
    assert op["stopped_by"] == "iterations" and op["attempts"] == 10
    assert [a["iteration"] for a in attempts(tmp_path)] == list(range(1, 11))
    assert not (tmp_path / "run" / "attempts.discarded.jsonl").exists()
    assert not (tmp_path / "run" / "turns" / "4_ReLU.json").exists()
    assert done["budget"]["spent_s"] > budget["spent_s"] and done["budget"]["stopped_by_budget"] == []


def test_the_estimate_comes_from_the_runs_own_attempt_times(tmp_path):
    queue = TurnQueue(planned=[], run_dir=tmp_path, iterations=10)
    queue.extendleft([tmp_path / "a.py", tmp_path / "b.py"])
    assert queue.plan()["attempt_s"] is None  # nothing measured yet
    assert "end estimated after the first attempts" in queue.line()
    for wall in (10.0, 30.0, 20.0):
        queue.attempt_done(wall)
    plan = queue.plan()
    assert plan["operators_left"] == 2 and plan["attempts_planned"] == 20 and plan["attempt_s"] == 20.0
    assert plan["ends_at"] == pytest.approx(time.time() + 20 * 20.0, abs=5)
    budgeted = TurnQueue(planned=[], run_dir=tmp_path, iterations=10, hours=0.05)  # 180 s left
    budgeted.extendleft([tmp_path / "a.py"])
    budgeted.walls = [20.0, 20.0, 20.0]
    assert budgeted.plan()["attempts_planned"] in (8, 9) and budgeted.plan()["ends_at"] <= budgeted.deadline
    assert "(budget 0.05 h, ends by" in budgeted.line()


def test_an_end_on_another_day_says_which_day():
    from datetime import datetime

    from launch.budget import _clock

    evening = datetime(2026, 12, 7, 18, 21).timestamp()
    assert _clock(evening, now=datetime(2026, 12, 7, 9, 0).timestamp()) == "18:21"
    assert _clock(evening + 86400 * 2, now=evening) == "Wed 09 Dec 18:21"
    assert _clock(None) == "?"


def test_the_expected_gain_orders_operators_as_the_records_do():
    from actors.messages import Attempt, EpisodeResult

    def a(i, stage, gate, ms=None):
        return Attempt(run_id="r", task="t", iteration=i, stage=stage, gate=gate, feasible=gate == "ok", latency_ms=ms)

    rates, none = RunRates(), EpisodeResult(task="t")
    fresh = expected_gain([], none, None, rates, 0.1)
    compiled = expected_gain([a(1, "draft", "correctness")], none, 0.17, rates, 0.1)
    never = expected_gain([a(i, "draft", "compile") for i in range(1, 13)], none, 0.17, rates, 0.1)
    assert fresh.value > compiled.value > never.value
    assert compiled.value == pytest.approx(DRAFT_RATES["compiled"] * 1.5)  # the memory at the records' 17%: x1
    slow = EpisodeResult(task="t", feasible=True, speedup_vs_eager=0.5)
    gaining = expected_gain([a(1, "draft", "ok", 10.0), a(2, "refine", "ok", 5.0)], slow, None, rates, 0.1)
    flat = expected_gain([a(1, "draft", "ok", 10.0), a(2, "refine", "ok", 10.5)], slow, None, rates, 0.1)
    assert gaining.value > flat.value
    fast = EpisodeResult(task="t", feasible=True, speedup_vs_eager=2.0)
    assert expected_gain([a(1, "draft", "ok", 10.0)], fast, None, rates, 0.1).value < \
        expected_gain([a(1, "draft", "ok", 10.0)], slow, None, rates, 0.1).value


@pytest.mark.slow
def test_the_budget_runs_turns_over_ray(tmp_path, capsys):
    """The same order over Ray: each turn an episode task, its state shipped back and forth."""
    agent = PlannedAgent({"4_ReLU": ["broken"] * 4, "7_Sigmoid": ["wrong", "slow:2", "slow:8", "slow:8"],
                          "8_Tanh": ["slow:4"] + ["slow:8"] * 3})
    with OpenAITestServer() as server:
        server.responder = agent
        run(server, tmp_path, "--iterations", "4", "--hours", "1", "--max-in-flight", "1", ray=True,
            settings=("--set", "episode.uncompiled_drafts=0", "--set", "episode.plateau_refinements=0"))
    order = agent.order
    assert order[:3] == [("4_ReLU", "draft"), ("7_Sigmoid", "draft"), ("8_Tanh", "draft")]
    assert order.index(("7_Sigmoid", "draft"), 2) < order.index(("4_ReLU", "draft"), 1)
    done = summary(tmp_path)
    ops = {op["task"]: op for op in done["operators"]}
    # (an episode lost with its worker on a loaded machine runs again from its first attempt: lost_tries)
    assert all(op["attempts"] == 4 for task, op in ops.items() if task not in done["lost_tries"])
    assert ops["7_Sigmoid"]["feasible"] and done["budget"]["moved_down"] >= 2
    if "4_ReLU" not in done["lost_tries"]:  # its turns' attempts continue one another
        assert [a["iteration"] for a in attempts(tmp_path) if a["task"] == "4_ReLU"] == [1, 2, 3, 4]
