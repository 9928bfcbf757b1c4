"""One rule for `evokernel run`'s exit codes (issue 63, point 4; docs/harness.md "Exit codes"):
0 every operator judged; 1 not every operator judged and `--resume` continues it as it is;
2 bad input (a task file that does not load); 130 interrupted. The status, the closing lines and
summary.json agree, because the first two are read from the third."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from actors.episode_factory import INFRA
from actors.messages import EpisodeResult
from launch.cli import main
from launch.commands.run_outcome import end_lines, exit_code, finish
from launch.run_summary import INTERRUPTED, RunSummary
from tests.actors import replies
from tests.actors.openai_server import OpenAITestServer, ScriptedAgent
from tests.launch.test_run_command import FAST_HARNESS

AGAIN = "evokernel run --resume runs/r"
JUDGED = EpisodeResult(task="1_Add", feasible=True, attempts=3, best_latency_ms=1.0, speedup_vs_eager=1.2)
NOT_LOADED = EpisodeResult(task="9_Broken", stopped_by="error",
                           error="task load: 9_Broken.py: loading the task did not finish within 120 s")


def summary(*operators: EpisodeResult, **fields) -> RunSummary:
    return RunSummary(run_id="r", mode="ray", planned=[op.task for op in operators], operators=list(operators),
                      finished_at="2026-12-06T00:00:00+00:00", **fields)


@pytest.mark.parametrize(("operators", "fields", "code"), [
    ([JUDGED, EpisodeResult(task="2_Mul", stopped_by="tokens")], {}, 0),
    ([JUDGED, NOT_LOADED], {}, 2),
    ([JUDGED, EpisodeResult(task="6_SiLU", stopped_by=INFRA, error="lost with its node: WorkerCrashedError: x")],
     {}, 1),
    ([JUDGED, EpisodeResult(task="6_SiLU", stopped_by=INFRA,
                            error="the machine's memory limit stopped 3 of 4 attempt(s): ...")], {}, 1),
    ([JUDGED, EpisodeResult(task="6_SiLU", stopped_by="error", error="episode task failed: KeyError: 'x'")], {}, 1),
    ([JUDGED, EpisodeResult(task="6_SiLU", stopped_by="budget")], {}, 1),
    ([NOT_LOADED, EpisodeResult(task="6_SiLU", stopped_by=INFRA, error="LLM endpoint fault: x")], {}, 1),
    ([JUDGED], {"error": "the run's Ray head stopped: its GCS at 10.0.0.1:6379 refuses connections"}, 1),
    ([JUDGED, EpisodeResult(task="2_Mul", stopped_by=INTERRUPTED, error=INTERRUPTED)], {"interrupted": True}, 130),
], ids=["judged", "task-file", "lost-node", "host-memory", "episode-failed", "time-budget", "resumable-wins",
        "ray-head", "interrupted"])
def test_the_rule(operators, fields, code):
    run = summary(*operators, **fields)
    assert exit_code(run) == code
    lines = end_lines(run, AGAIN)
    if code == 0:
        assert lines == []
    elif code == 130:
        assert lines == [f"interrupted: continue with  {AGAIN}"]
    else:  # why, then the resume command, once
        assert sum(AGAIN in line for line in lines) == 1 and lines[-1].endswith(AGAIN)
        assert all(line.startswith(("evokernel run: ", "  ")) and "\n" not in line for line in lines)


def test_an_operator_that_never_ended_is_not_a_complete_run():
    run = summary(JUDGED)
    run.planned.append("2_Mul")
    assert exit_code(run) == 1 and "evokernel run: 1 operator(s) never ended: 2_Mul" in end_lines(run, AGAIN)


def test_a_stop_the_campaign_could_not_record_is_recorded_before_the_end_is_said(tmp_path, capsys):
    """The issue's SIGTERM 0.45-1.2 s after the last operator: exit 130 with `finished_at: null` or
    `interrupted: false`. A stop that escaped before the campaign recorded its end is recorded
    first; one that came after the end changes nothing (the status is the summary's)."""
    running = summary(JUDGED).model_copy(update={"finished_at": None})
    running.write(tmp_path)
    assert finish(tmp_path, AGAIN, "ray", interrupted=True) == 130
    saved = RunSummary.load(tmp_path)
    assert saved.interrupted and saved.finished_at  # as a Ray run's stop records it
    out, err = capsys.readouterr()
    assert "1/1 operators feasible" in out and f"interrupted: continue with  {AGAIN}" in err  # the table too

    summary(JUDGED).write(tmp_path)  # the end was recorded: a stop after it changes nothing
    assert finish(tmp_path, AGAIN, "ray", interrupted=True) == 0
    assert not RunSummary.load(tmp_path).interrupted

    running.write(tmp_path)  # an error that escaped: recorded, then said with the resume command
    assert finish(tmp_path, AGAIN, "single-process", stopped="the memory bank cannot be written") == 1
    assert RunSummary.load(tmp_path).error == "the memory bank cannot be written"
    assert capsys.readouterr().err.splitlines()[-2:] == ["evokernel run: stopped: the memory bank cannot be written",
                                                         f"  continue with  {AGAIN}"]


def test_a_task_file_that_does_not_load_is_bad_input(tmp_path, capsys):
    """It used to end with exit 0. The other operator runs; the broken file is named in one line."""
    suite = tmp_path / "suite"
    suite.mkdir()
    relu = Path(__file__).resolve().parents[2] / "suites" / "cpu" / "level1" / "4_ReLU.py"
    (suite / "4_ReLU.py").write_text(relu.read_text())
    (suite / "9_Broken.py").write_text("raise RuntimeError('this task file is broken')\n")
    run_dir = tmp_path / "run"
    with OpenAITestServer() as server:
        server.responder = ScriptedAgent([replies.FAST])
        code = main([*FAST_HARNESS, "run", "--no-ray", "--suite", str(suite), "--llm-base-url", server.base_url,
                     "--llm-model", server.model, "--memory", str(tmp_path / "bank"), "--out", str(run_dir),
                     "--backend", "cpu", "--iterations", "1"])
    err = capsys.readouterr().err
    assert code == 2, err
    [line] = [line for line in err.splitlines() if "9_Broken" in line and "was not run" in line]
    assert line.startswith("evokernel run: 9_Broken was not run: task load: ") and "this task file is broken" in line
    assert f"  fix the task file(s), then continue with  evokernel run --no-ray --resume {run_dir}" in err
    ops = {op["task"]: op for op in json.loads((run_dir / "summary.json").read_text())["operators"]}
    assert ops["4_ReLU"]["feasible"] and ops["9_Broken"]["stopped_by"] == "error"


def test_attempts_the_machines_memory_limit_stopped_make_a_resumable_run(tmp_path, capsys, monkeypatch):
    """Issue 63, point 2: under a host limit below the candidate's, attempts are rightly infrastructure
    faults; the operator then used to count as done (exit 0, no resume hint, nothing left to resume).
    Here the "machine" is a real cgroup of HOST_MB above the candidates' (as in test_host_memory): the
    operator is not judged, the run exits 1 naming the host's limit, and the resume redoes it."""
    from npu_pool.config import HarnessConfig
    from npu_pool.sandbox import tree_limits
    from npu_pool.sandbox.task_loader import load_task_for
    from tests.npu_pool.sandbox.test_host_memory import ALLOCATES_512_MIB, HOST_MB, _host_group

    # the run's task loader started before the "machine" is made: the limit is the candidates' here
    # (run alone, the loader started inside it and torch's import did not fit)
    load_task_for(Path(__file__).resolve().parents[2] / "suites" / "cpu" / "level1" / "4_ReLU.py", HarnessConfig())
    made = _host_group(HOST_MB)
    if made is None:
        pytest.skip("no writable cgroup here: no host limit to model")
    kind, host, cgroups = made
    real = tree_limits._own_cgroups
    monkeypatch.setattr(tree_limits, "_own_cgroups", lambda: cgroups)
    if kind == "cgroup v2":
        monkeypatch.setattr(tree_limits, "_v2_base", lambda: host)
    run_dir = tmp_path / "run"
    args = [*FAST_HARNESS, "--set", "harness.memory_limit_mb=2048", "run", "--no-ray", "--tasks", "4_ReLU*",
            "--memory", str(tmp_path / "bank"), "--backend", "cpu"]
    try:
        with OpenAITestServer() as server:
            server.responder = ScriptedAgent([f"```cpp\n{ALLOCATES_512_MIB}```", replies.FAST])
            code = main([*args, "--out", str(run_dir), "--llm-base-url", server.base_url, "--llm-model", server.model,
                         "--iterations", "2"])
        err = capsys.readouterr().err
        assert code == 1, err
        [operator] = json.loads((run_dir / "summary.json").read_text())["operators"]
        assert operator["stopped_by"] == "infra" and operator["feasible"]  # its second draft passed
        assert operator["error"].startswith("the machine's memory limit stopped 1 of 2 attempt(s): the machine's "
                                            f"own memory limit ({HOST_MB} MiB")
        [line] = [line for line in err.splitlines() if "stopped by the machine's own memory limit" in line]
        assert line.startswith("evokernel run: 1 operator(s) had attempts stopped by the machine's own memory limit, "
                               f"not judged: 4_ReLU; this machine holds {HOST_MB} MiB") and "besides its candidates" in line
        assert f"  continue with  evokernel run --no-ray --resume {run_dir}" in err
    finally:
        monkeypatch.setattr(tree_limits, "_own_cgroups", real)
        for child in host.glob("evokernel-*"):
            child.rmdir()
        host.rmdir()
    with OpenAITestServer() as server:  # the machine has room again: the resume redoes the operator
        server.responder = ScriptedAgent([replies.FAST])
        assert main([*FAST_HARNESS, "run", "--no-ray", "--resume", str(run_dir), "--llm-base-url", server.base_url,
                     "--iterations", "1"]) == 0
    [operator] = json.loads((run_dir / "summary.json").read_text())["operators"]
    assert operator["stopped_by"] == "iterations" and operator["feasible"] and operator["attempts"] == 1
    assert len((run_dir / "attempts.discarded.jsonl").read_text().splitlines()) == 2
