"""`evokernel run` end to end, single-process: scripted HTTP LLM, real harness, real bank, run folder."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest

from launch.campaign import default_suite, select_tasks
from launch.cli import main
from memory_actor.seeding import bundle_items
from tests.actors import replies
from tests.actors.openai_server import OpenAITestServer, Reply, ScriptedAgent

FAST_HARNESS = ["--set", "harness.compile_baseline=false", "--set", "harness.timed_trials=5",
                "--set", "harness.warmup_trials=1", "--set", "harness.correctness_trials=2",
                "--set", "harness.profile_input_sets=1", "--set", "llm.candidate_format=kernel"]


def run_cli(server: OpenAITestServer, tmp_path, *extra: str) -> int:
    return main([*FAST_HARNESS, "run", "--no-ray", "--tasks", "4_ReLU*", "--llm-base-url", server.base_url,
                 "--llm-model", server.model, "--memory", str(tmp_path / "bank"), "--out", str(tmp_path / "run"),
                 "--backend", "cpu", *extra])


def test_run_writes_summary_and_attempts(tmp_path, capsys):
    with OpenAITestServer() as server:
        server.responder = ScriptedAgent([replies.BROKEN, replies.FAST])
        assert run_cli(server, tmp_path, "--iterations", "2") == 0
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    [operator] = summary["operators"]
    assert operator["task"] == "4_ReLU" and operator["feasible"] and operator["first_feasible_iteration"] == 2
    assert operator["attempts"] == 2 and operator["tokens"] > 0 and operator["best_latency_ms"] > 0
    assert summary["finished_at"] and summary["totals"]["feasible"] == 1 and summary["mode"] == "single-process"
    assert summary["settings"]["episode"]["iterations"] == 2
    attempts = [json.loads(line) for line in (tmp_path / "run" / "attempts.jsonl").read_text().splitlines()]
    assert [(a["iteration"], a["gate"]) for a in attempts] == [(1, "compile"), (2, "ok")]
    out, err = capsys.readouterr()
    assert "1/1 operators feasible" in out
    # A first run starts from the backend's bundle: the drafts were shown its knowledge.
    seeded = len(bundle_items("cpu"))  # the bundle's examples, rungs and API items
    assert f"the memory bank {tmp_path / 'bank'} was empty: seeded {seeded} cpu bundle items" in err
    assert any(s["id"].startswith("bundle-") for s in attempts[0]["shown"])
    assert any(s["role"] == "api" and s["kind"] == "api" for s in attempts[0]["shown"])


def test_a_bank_in_use_is_not_seeded_again(tmp_path, capsys):
    from memory_actor.bank import MemoryBank
    from memory_actor.config import MemoryConfig
    from memory_actor.items import MemoryItem

    bank = MemoryBank(MemoryConfig(uri=str(tmp_path / "bank"), preload_embedder=False))
    bank.add([MemoryItem(kind="experience", backend="cpu", content="a lesson of an earlier run", summary="lesson")])
    bank.close()
    with OpenAITestServer() as server:
        server.responder = ScriptedAgent([replies.FAST])
        assert run_cli(server, tmp_path, "--iterations", "1") == 0
    assert "seeded" not in capsys.readouterr().err
    assert len(MemoryBank(MemoryConfig(uri=str(tmp_path / "bank"), preload_embedder=False)).items) == 2


def test_fatal_llm_configuration_stops_the_run_with_a_clear_message(tmp_path, capsys):
    with OpenAITestServer(model="served-model") as server:
        code = main([*FAST_HARNESS, "run", "--no-ray", "--tasks", "4_ReLU*", "--llm-base-url", server.base_url,
                     "--llm-model", "missing-model", "--memory", str(tmp_path / "bank"),
                     "--out", str(tmp_path / "run"), "--backend", "cpu"])
    assert code == 1
    assert "does not know model 'missing-model'" in capsys.readouterr().err
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert "missing-model" in summary["error"] and summary["operators"][0]["error"]


def test_tasks_take_several_comma_separated_globs():
    suite = default_suite()
    picked = [p.stem for p in select_tasks(suite, "4_ReLU*, level2/1_*,18_Softmax")]
    assert picked == ["4_ReLU", "18_Softmax", "1_GemmBiasReLU"]


def test_unknown_tasks_are_a_usage_error(tmp_path, capsys):
    assert main(["run", "--tasks", "no_such_task*", "--llm-base-url", "http://127.0.0.1:9/v1"]) == 2
    assert "no task" in capsys.readouterr().err


def test_no_endpoint_uses_the_local_server_and_says_what_to_do_when_it_cannot(tmp_path, capsys):
    missing = tmp_path / "no-such-model.gguf"
    code = main(["--set", f"local_llm.model_path={missing}", "run", "--tasks", "4_ReLU*", "--out", str(tmp_path / "run")])
    assert code == 2
    err = capsys.readouterr().err
    assert "--llm-base-url" in err and (str(missing) in err or "not installed" in err)


@pytest.mark.slow
def test_sigterm_stops_the_run_cleanly(tmp_path):
    """A fresh process (about a minute on a busy machine), stopped while it waits on the LLM."""
    with OpenAITestServer() as server:
        server.default = Reply(replies.BROKEN, delay_s=30)  # the run waits on the LLM
        run = subprocess.Popen(
            [sys.executable, "-m", "launch.cli", *FAST_HARNESS, "run", "--no-ray", "--tasks", "4_ReLU*",
             "--llm-base-url", server.base_url, "--llm-model", server.model, "--memory", str(tmp_path / "bank"),
             "--out", str(tmp_path / "run"), "--backend", "cpu"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 120
        while not server.chat_requests and time.monotonic() < deadline and run.poll() is None:
            time.sleep(0.2)
        assert server.chat_requests, run.communicate()[1][-2000:]
        run.send_signal(signal.SIGTERM)
        _, err = run.communicate(timeout=60)
    assert run.returncode == 130, err[-2000:]
    assert f"interrupted: continue with  evokernel run --no-ray --resume {tmp_path / 'run'}" in err
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["finished_at"] is None and summary["interrupted"]  # the run did not finish, and says so
    [operator] = summary["operators"]  # what the operator in flight did is kept, marked
    assert operator["task"] == "4_ReLU" and operator["stopped_by"] == "interrupted"
    assert summary["planned_paths"] and summary["planned"] == ["4_ReLU"]  # what --resume needs

    # The hint works: the same run continues in this process, the interrupted operator again.
    with OpenAITestServer() as server:
        server.responder = ScriptedAgent([replies.FAST])
        assert main([*FAST_HARNESS, "run", "--no-ray", "--resume", str(tmp_path / "run"),
                     "--llm-base-url", server.base_url, "--iterations", "1"]) == 0
    resumed = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert resumed["run_id"] == summary["run_id"] and resumed["resumed_at"] and resumed["finished_at"]
    [operator] = resumed["operators"]
    assert operator["task"] == "4_ReLU" and operator["feasible"] and operator["stopped_by"] != "interrupted"


def test_a_lost_endpoint_pauses_then_stops_the_single_process_run(tmp_path, capsys):
    """The Ray campaign's policy, here too: the operator in flight fails, the run waits
    llm.endpoint_wait_s for the endpoint, then stops with what it has."""
    import threading

    server = OpenAITestServer().__enter__()
    server.responder = ScriptedAgent([replies.WRONG] * 8)
    attempts = tmp_path / "run" / "attempts.jsonl"

    def cut_when_an_attempt_is_on_disk() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not (attempts.exists() and attempts.read_text().strip()):
            time.sleep(0.1)
        server.__exit__(None, None, None)

    threading.Thread(target=cut_when_an_attempt_is_on_disk, daemon=True).start()
    code = main([*FAST_HARNESS, "--set", "llm.max_retries=1", "--set", "llm.backoff_base_s=0.05",
                 "--set", "llm.backoff_max_s=0.1", "--set", "llm.endpoint_wait_s=1", "run", "--no-ray",
                 "--tasks", "4_ReLU*,6_SiLU*,7_Sigmoid*", "--llm-base-url", server.base_url, "--llm-model",
                 server.model, "--memory", str(tmp_path / "bank"), "--out", str(tmp_path / "run"), "--backend", "cpu",
                 "--iterations", "4"])
    assert code == 1
    err = capsys.readouterr().err
    assert "did not come back within 1 s" in err
    assert "does not answer: waiting up to 1 s for it (new attempts paused)" in err  # the wait, said when it starts
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    # The server's open keep-alive connection may still serve the first operator: the loss shows
    # at the latest when the second one connects, and the third never starts.
    *done, lost = summary["operators"]
    assert len(done) <= 1 and all(op["error"] is None for op in done)
    assert lost["error"].startswith("LLM endpoint lost")
    assert summary["planned"] == ["4_ReLU", "6_SiLU", "7_Sigmoid"]
    assert summary["error"].startswith("the LLM endpoint") and summary["finished_at"] is None


class _StepClock:
    """Stands in for the `time` module in actors.llm_client: sleeping advances the clock by
    exactly that much, so the wait's schedule is checked without depending on the machine's load."""

    def __init__(self) -> None:
        self.now, self.sleeps = 1000.0, []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def test_waiting_for_an_endpoint_returns_as_soon_as_it_answers(monkeypatch):
    import actors.llm_client as llm_client

    probes: list[bool] = []
    real_probe = llm_client.llm_reachable

    def probe(base_url, *args, **kwargs):
        probes.append(real_probe(base_url, *args, **kwargs))
        return probes[-1]

    monkeypatch.setattr(llm_client, "llm_reachable", probe)
    clock = _StepClock()
    monkeypatch.setattr(llm_client, "time", clock)
    with OpenAITestServer() as server:
        assert llm_client.wait_for_endpoint(server.base_url, 30)
        assert probes == [True] and clock.sleeps == []  # the first probe answered: no wait at all
    probes.clear()
    assert not llm_client.wait_for_endpoint(server.base_url, 0.25, poll_s=0.1)
    # Polled every poll_s until wait_s had passed, then gave up: never slept past the deadline.
    assert len(probes) >= 3 and not any(probes)
    assert all(0 < s <= 0.1 for s in clock.sleeps) and sum(clock.sleeps) == pytest.approx(0.25)


def test_a_run_folder_belongs_to_one_run(tmp_path, capsys):
    with OpenAITestServer() as server:
        server.responder = ScriptedAgent([replies.FAST])
        assert run_cli(server, tmp_path, "--iterations", "1") == 0
        before = (tmp_path / "run" / "summary.json").read_text(), (tmp_path / "run" / "attempts.jsonl").read_text()
        capsys.readouterr()
        assert run_cli(server, tmp_path, "--iterations", "1") == 2  # a second run into the same --out
    err = capsys.readouterr().err.strip()
    assert err == (f"evokernel run: {tmp_path / 'run'} holds another run: continue it with "
                   f"`evokernel run --resume {tmp_path / 'run'}`, or pick another --out folder")
    assert ((tmp_path / "run" / "summary.json").read_text(), (tmp_path / "run" / "attempts.jsonl").read_text()) == before


@pytest.mark.parametrize("ray_mode", [False, True])
def test_an_unusable_bank_path_is_one_line_before_anything_starts(tmp_path, capsys, ray_mode):
    import ray

    (tmp_path / "bank").write_text("a file where the bank should be")
    with OpenAITestServer() as server:
        code = main([*FAST_HARNESS, "run", *([] if ray_mode else ["--no-ray"]), "--tasks", "4_ReLU*",
                     "--llm-base-url", server.base_url, "--llm-model", server.model, "--memory",
                     str(tmp_path / "bank"), "--out", str(tmp_path / "run"), "--backend", "cpu"])
        assert server.requests == []  # no model call
    assert code == 2 and not ray.is_initialized() and not (tmp_path / "run").exists()
    err = capsys.readouterr().err.strip()
    assert err.splitlines() == [f"evokernel run: the memory bank path {tmp_path / 'bank'} is a file, not a folder: "
                                "pick a folder with --memory"]


def test_a_bank_another_process_writes_is_refused_naming_it(tmp_path, capsys):
    from tests.memory_actor.test_lease import holder

    with holder(str(tmp_path / "bank")) as process, OpenAITestServer() as server:
        assert run_cli(server, tmp_path, "--iterations", "1") == 2
        assert server.requests == []
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "is in use by evokernel run holder-run" in err and f"pid {process.pid}" in err


ENDPOINT_FAULTS = ["--set", "llm.max_retries=2", "--set", "llm.backoff_base_s=0.01", "--set", "llm.backoff_max_s=0.02"]


def test_endpoint_faults_stop_the_operator_as_infrastructure_not_as_a_verdict(tmp_path, capsys):
    from memory_actor.bank import MemoryBank
    from memory_actor.config import MemoryConfig

    with OpenAITestServer() as server:
        server.default = Reply(fault="empty_choices")  # every try: a 200 without choices
        code = main([*FAST_HARNESS, *ENDPOINT_FAULTS, "run", "--no-ray", "--tasks", "4_ReLU*", "--llm-base-url",
                     server.base_url, "--llm-model", server.model, "--memory", str(tmp_path / "bank"),
                     "--out", str(tmp_path / "run"), "--backend", "cpu", "--iterations", "2"])
        assert len(server.chat_requests) == 3  # retried like a 5xx, then given up
    assert code == 1
    out, err = capsys.readouterr()
    assert "1 operator(s) stopped by the LLM endpoint's faults, not judged: 4_ReLU" in err
    assert f"continue with  evokernel run --no-ray --resume {tmp_path / 'run'}" in err
    assert "llm_retry" in out + err and "empty reply: no choices" in out + err  # each retry, one line
    [operator] = json.loads((tmp_path / "run" / "summary.json").read_text())["operators"]
    assert operator["stopped_by"] == "infra" and operator["attempts"] == 0
    assert operator["error"].startswith("LLM endpoint fault: ") and "\n" not in operator["error"]
    attempts = tmp_path / "run" / "attempts.jsonl"
    assert not attempts.exists() or attempts.read_text() == ""  # no failed attempt stored
    bank = MemoryBank(MemoryConfig(uri=str(tmp_path / "bank"), preload_embedder=False), read_only=True)
    assert bank.stats().updates == 0 and not [i for i in bank.items.values() if i.kind == "trace"]  # no -1 to anything

    with OpenAITestServer() as server:  # the endpoint is fixed: resume redoes the operator
        server.responder = ScriptedAgent([replies.FAST])
        assert main([*FAST_HARNESS, "run", "--no-ray", "--resume", str(tmp_path / "run"), "--llm-base-url",
                     server.base_url, "--iterations", "1"]) == 0
    [operator] = json.loads((tmp_path / "run" / "summary.json").read_text())["operators"]
    assert operator["feasible"] and operator["stopped_by"] != "infra"


def test_the_closing_lines_say_which_operators_a_stop_cut_short(tmp_path, capsys):
    from actors.messages import EpisodeResult
    from launch.commands.run_outcome import print_summary
    from launch.run_summary import INTERRUPTED, RunSummary

    summary = RunSummary(run_id="r", settings={"harness": {"backend": "cpu"}}, operators=[
        EpisodeResult(task="1_Add", feasible=True, attempts=3, best_latency_ms=1.5, speedup_vs_eager=0.7),
        EpisodeResult(task="2_Multiply", feasible=True, attempts=4, best_latency_ms=1.6, speedup_vs_eager=0.9,
                      stopped_by=INTERRUPTED, error=INTERRUPTED)])
    print_summary(summary, tmp_path)
    lines = capsys.readouterr().out.splitlines()
    assert "(interrupted)" not in lines[0] and "0.90x eager (interrupted)" in lines[1]
    assert lines[2].startswith("2/2 operators feasible (1 interrupted: --resume runs them again); 7 attempts")
