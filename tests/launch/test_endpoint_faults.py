"""Infrastructure is not a verdict: what the run says about endpoint faults, in one line each."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
import structlog
import structlog.testing

from actors.errors import error_line
from actors.messages import EpisodeResult
from launch.metrics import CampaignCounters
from launch.ray_campaign.concurrent_campaign import ProgressDisplay
from launch.run_summary import RunSummary
from tests.actors.openai_server import OpenAITestServer, Reply

REPO = Path(__file__).resolve().parents[2]
RAY_TRACEBACK = ("\x1b[36mray::DrafterActor.propose()\x1b[39m (pid=4242, ip=10.0.0.7)\n"
                 "Traceback (most recent call last):\n  File \"actors/worker.py\", line 66, in _ask\n"
                 "    reply = await self.client.chat(messages, temperature=temperature)\n"
                 "json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)")


def test_operator_errors_are_one_readable_line_in_the_summary(tmp_path):
    summary = RunSummary(operators=[EpisodeResult(task="4_ReLU", stopped_by="error", error=RAY_TRACEBACK),
                                    EpisodeResult(task="6_SiLU", error="plain reason")],
                         error="stopped:\n\x1b[31mthe endpoint\x1b[0m did not come back")
    summary.write(tmp_path)
    saved = RunSummary.load(tmp_path)
    assert saved.operators[0].error == "json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)"
    assert saved.operators[1].error == "plain reason"
    assert saved.error == "stopped: the endpoint did not come back"


def test_a_remote_exception_is_its_cause_in_one_line():
    class Remote(Exception):
        cause = ValueError("bad body\nsecond line")

    assert error_line(Remote(RAY_TRACEBACK)) == "ValueError: bad body second line"
    assert error_line(KeyError("k")) == "KeyError: 'k'"


def test_a_note_is_one_line_above_the_status_line():
    stream = io.StringIO()
    display = ProgressDisplay(stream, tty=True)
    display.show(CampaignCounters(planned=2))
    display.note("LLM endpoint fault: empty reply: no choices; try 2 of 3 in 0.5 s")
    display.show(CampaignCounters(planned=2))
    lines = stream.getvalue().split("\n")
    assert lines[0].endswith("evokernel run: LLM endpoint fault: empty reply: no choices; try 2 of 3 in 0.5 s")
    assert lines[0].startswith("\r\x1b[K0/2 done") and "0/2 done" in lines[1]  # the status line again, below


def test_a_fault_note_is_a_warning_and_the_plan_is_not():
    display = ProgressDisplay(io.StringIO(), tty=False)
    with structlog.testing.capture_logs() as logs:
        display.note("LLM endpoint fault: empty reply; try 2 of 3 in 0.5 s")
        display.note("106 operator(s) left, up to 3180 attempts", fault=False)
    assert [(entry["event"], entry["log_level"]) for entry in logs] == [("campaign_note", "warning"),
                                                                       ("campaign_note", "info")]


@pytest.mark.slow
def test_a_body_that_is_not_json_stops_the_operator_as_infrastructure_with_ray(tmp_path):
    """The issue's case: a 200 that is not JSON used to end the operator with a 40-line Ray
    traceback in summary.json and exit 0."""
    with OpenAITestServer() as server:
        server.default = Reply(fault="bad_json")
        run = subprocess.run(
            [sys.executable, "-m", "launch.cli", "--set", "llm.max_retries=2", "--set", "llm.backoff_base_s=0.2",
             "--set", "llm.backoff_max_s=0.4", "--set", "harness.compile_baseline=false", "run", "--tasks", "4_ReLU*",
             "--llm-base-url", server.base_url, "--llm-model", server.model, "--memory", str(tmp_path / "bank"),
             "--out", str(tmp_path / "run"), "--backend", "cpu", "--iterations", "2"],
            capture_output=True, text=True, cwd=REPO, timeout=600)
    assert run.returncode == 1, run.stderr[-3000:]
    assert "1 operator(s) stopped by the LLM endpoint's faults, not judged: 4_ReLU" in run.stderr
    assert f"continue with  evokernel run --resume {tmp_path / 'run'}" in run.stderr
    [operator] = json.loads((tmp_path / "run" / "summary.json").read_text())["operators"]
    assert operator["stopped_by"] == "infra" and operator["attempts"] == 0
    assert operator["error"].startswith("LLM endpoint fault: ") and "unparsable reply" in operator["error"]
    assert "\n" not in operator["error"] and "\x1b" not in operator["error"] and "Traceback" not in operator["error"]
    assert "\x1b" not in run.stdout  # the final table: one plain line per operator
    # the retries, made in the LLM workers' processes, were said on the driver's terminal
    assert "evokernel run: LLM endpoint fault: unparsable reply: JSONDecodeError" in run.stderr


def test_a_tool_call_endpoint_gets_a_hint_that_says_so(tmp_path, capsys):
    """Issue 63: an endpoint answering every draft with a tool call and no content; the run's
    closing hint said to switch --candidate-format. Now each attempt says what the endpoint did
    (gate `llm`: the endpoint's, not the model's) and the hint names the tool-call parser."""
    from launch.cli import main
    from tests.launch.test_run_command import FAST_HARNESS

    with OpenAITestServer() as server:
        server.default = Reply(None, finish_reason="tool_calls", tool_calls=["write_kernel"], prompt_tokens=500,
                               completion_tokens=30)
        code = main([*FAST_HARNESS, "run", "--no-ray", "--tasks", "4_ReLU*", "--llm-base-url", server.base_url,
                     "--llm-model", server.model, "--memory", str(tmp_path / "bank"), "--out", str(tmp_path / "run"),
                     "--backend", "cpu", "--iterations", "2"])
        assert len(server.chat_requests) == 2  # one request per attempt: not retried
    assert code == 0  # the operator ran to its budget
    out, err = capsys.readouterr()
    hint = next(line for line in err.splitlines() if "every attempt failed the same way" in line)
    assert "at the llm gate" in hint and "tool-call parser" in hint and "--candidate-format" not in hint
    attempts = [json.loads(line) for line in (tmp_path / "run" / "attempts.jsonl").read_text().splitlines()]
    assert all("answered with a tool call (write_kernel) and no text" in a["reason"] for a in attempts)
    assert [a["tokens_prompt"] + a["tokens_completion"] for a in attempts] == [530, 530]  # billed, so counted
    assert "1060 tokens" in out


def test_what_the_endpoint_billed_for_oversized_replies_is_counted(tmp_path, capsys):
    """Issue 63: six replies of 1.25 M tokens each, every one an endpoint fault (oversized), ended
    the operator as infrastructure with "0 tokens". What the endpoint billed counts."""
    from launch.cli import main
    from tests.launch.test_run_command import FAST_HARNESS

    with OpenAITestServer() as server:
        server.default = Reply("x" * 100_000, prompt_tokens=1000, completion_tokens=1_250_000)
        code = main([*FAST_HARNESS, "--set", "llm.max_retries=2", "--set", "llm.backoff_base_s=0.05",
                     "--set", "llm.backoff_max_s=0.1", "run", "--no-ray", "--tasks", "4_ReLU*",
                     "--llm-base-url", server.base_url, "--llm-model", server.model, "--memory", str(tmp_path / "bank"),
                     "--out", str(tmp_path / "run"), "--backend", "cpu", "--iterations", "1"])
        assert len(server.chat_requests) == 3
    assert code == 1
    out, err = capsys.readouterr()
    [operator] = json.loads((tmp_path / "run" / "summary.json").read_text())["operators"]
    assert operator["stopped_by"] == "infra" and operator["tokens"] == 3 * 1_251_000
    assert "(billed 3,753,000 tokens)" in operator["error"]
    assert "3753000 tokens" in out  # the final table's total
