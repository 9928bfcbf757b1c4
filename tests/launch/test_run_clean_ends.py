"""Every end of a Ray-mode `evokernel run` is a clean one (issue 63, point 3), in a real process on
a real local Ray instance, with the loopback OpenAI server as the model:

- SIGKILL of the run's own Ray head (its gcs_server) mid-campaign used to end the run after 60 s
  with Ray's C++ line ("Failed to connect to GCS within 60 seconds ... The program will
  terminate"), exit 1, no resume command, `finished_at: null`. Now: one evokernel line with the
  resume command, a summary that says so, exit 1, well before Ray's own end;
- SIGTERM 0.45-1.2 s after the last operator ended used to give exit 130 with `finished_at: null`
  or `interrupted: false` and no final table: the status, the table and summary.json now agree;
- after either, no process of the run's Ray instance is left (the dashboard and runtime-env agents
  outlived abnormal ends for minutes) and no control group of a process of the run (a task
  loader's, when Ray SIGKILLs the episode worker that made it: one after every normal run).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from npu_pool.sandbox import tree_limits
from tests.actors import replies
from tests.actors.openai_server import OpenAITestServer, Reply, ScriptedAgent
from tests.launch.test_run_command import FAST_HARNESS

REPO = Path(__file__).resolve().parents[2]


class RunWatch:
    """The run's process and every process below it, noted while it runs (pid -> start time,
    command), to check afterwards that none of its Ray processes outlived it."""

    def __init__(self, command: list[str], log: Path):
        self.log = log.open("w+")
        self.process = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, stderr=self.log, text=True)
        self.seen: dict[int, tuple[str, str]] = {}
        self.titles: set[str] = set()  # every command any of them had (a Ray worker retitles itself per task)

    def note(self) -> None:
        from launch.ray_campaign.ray_session import _descendants

        for pid in _descendants(self.process.pid):  # noted again each time: a fork shows its command after exec
            if (found := _identity(pid)) is not None and (pid not in self.seen or self.seen[pid][0] == found[0]):
                self.seen[pid] = found
                self.titles.add(found[1])

    def wait_for(self, condition, what: str, limit_s: float = 600) -> None:
        deadline = time.monotonic() + limit_s  # a liveness bound: Ray takes minutes to start under load
        while not condition() and time.monotonic() < deadline and self.process.poll() is None:
            self.note()
            time.sleep(0.2)
        assert condition(), f"{what} never came:\n{self.stderr()[-3000:]}"

    def stderr(self) -> str:
        self.log.seek(0)
        return self.log.read()

    def survivors(self) -> list[str]:
        """Ray's processes of the run still there (pid and start time as noted)."""
        return [f"{pid} {command[:80]}" for pid, (started, command) in self.seen.items()
                if (now := _identity(pid)) is not None and now[0] == started and _is_rays(now[1])]

    def dead_owners_groups(self) -> list[Path]:
        """Control groups made by processes of this run (named evokernel-<owner pid>-<n>) still there."""
        own = tree_limits._own_cgroups()
        bases = [base for base in (own.get("v2"), own.get("memory"), own.get("pids")) if base is not None]
        owners = {*map(str, self.seen), str(self.process.pid)}
        return [folder for base in bases for folder in base.glob("evokernel-*-*") if folder.name.split("-")[1] in owners]

    def end(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        for pid in self.survivors():  # what the run left is this test's to end
            os.kill(int(pid.split()[0]), signal.SIGKILL)


def _identity(pid: int) -> tuple[str, str] | None:
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19], command
    except (OSError, IndexError):
        return None


def _is_rays(command: str) -> bool:
    return command.startswith(("ray::", "ray-dashboard-")) or "/site-packages/ray/" in command


def _command(server: OpenAITestServer, tmp_path: Path, tasks: str, iterations: int, namespace: str) -> list[str]:
    return [sys.executable, "-m", "launch.cli", *FAST_HARNESS, "--set", "episode.lessons=false",
            "--set", f"ray.namespace={namespace}", "--set", f"memory.actor_name={namespace}-memory",
            "run", "--ray-address", "local", "--max-in-flight", "2", "--tasks", tasks, "--iterations", str(iterations),
            "--backend", "cpu", "--llm-base-url", server.base_url, "--llm-model", server.model,
            "--memory", str(tmp_path / "bank"), "--out", str(tmp_path / "run")]


def _no_leftovers(run: RunWatch) -> None:
    time.sleep(3)  # Ray's processes go within a second of the driver; give a loaded machine a little more
    assert run.survivors() == [], "Ray processes of the run outlived it"
    assert run.dead_owners_groups() == [], "control groups of the run's processes were left behind"


@pytest.mark.slow
def test_a_killed_ray_head_ends_the_run_in_one_line_with_its_resume_command(tmp_path):
    """About two minutes on a loaded machine (a Ray start and the end)."""
    with OpenAITestServer() as server:
        server.default = Reply(replies.FAST, delay_s=30)  # both episodes are waiting on the model
        run = RunWatch(_command(server, tmp_path, "4_ReLU.py,5_*", 2, "evokernel-head-lost-test"), tmp_path / "err")
        try:
            run.wait_for(lambda: len(server.chat_requests) >= 2, "two model requests")
            [gcs] = [pid for pid, (_, command) in run.seen.items() if command.split()[:1] and "gcs_server" in command.split()[0]]
            killed = time.monotonic()
            os.kill(gcs, signal.SIGKILL)
            out, _ = run.process.communicate(timeout=120)
            took = time.monotonic() - killed
            err = run.stderr()
            assert run.process.returncode == 1, err[-3000:]
            assert took < 50, f"the run took {took:.0f} s to end: Ray's own end comes at 60 s"
            assert "Failed to connect to GCS" not in err and "Traceback" not in err
            stopped = [line for line in err.splitlines() if line.startswith("evokernel run: stopped")]
            assert len(stopped) == 1 and "the run's Ray head stopped" in stopped[0], err[-3000:]
            assert f"  continue with  evokernel run --resume {tmp_path / 'run'}" in err
            summary = json.loads((tmp_path / "run" / "summary.json").read_text())
            assert summary["finished_at"] and not summary["interrupted"]
            assert summary["error"].startswith("the run's Ray head stopped")
            assert summary["operators"] and all(op["stopped_by"] == "infra" for op in summary["operators"])
            assert "operators feasible" in out  # the final table
            _no_leftovers(run)
        finally:
            run.end()


@pytest.mark.slow
@pytest.mark.parametrize("delay_s", [0.45, 0.8, 1.2])
def test_sigterm_right_after_the_last_operator_gives_a_summary_that_agrees(tmp_path, delay_s):
    """About two minutes each. The stop lands in the run's end (the memory's flush, the final
    summary, the teardown): whichever it hits, the exit status is what summary.json says, and
    the table and the closing lines are printed."""
    with OpenAITestServer() as server:
        server.responder = ScriptedAgent([replies.FAST])
        run = RunWatch(_command(server, tmp_path, "4_ReLU.py", 1, f"evokernel-late-stop-{delay_s}"), tmp_path / "err")
        try:
            run.wait_for(lambda: '"event": "operator_done"' in run.stderr(), "the operator's end")
            time.sleep(delay_s)
            run.process.send_signal(signal.SIGTERM)
            out, _ = run.process.communicate(timeout=180)
        finally:
            run.end()
    err = run.stderr()
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    code = run.process.returncode
    assert code in (0, 130), err[-3000:]
    assert summary["finished_at"], summary  # a Ray run records when it ended, however it ended
    if code == 130:
        assert summary["interrupted"] is True
        assert f"interrupted: continue with  evokernel run --resume {tmp_path / 'run'}" in err
    else:
        assert summary["interrupted"] is False and summary["error"] is None
        assert "interrupted: continue with" not in err
    assert "1/1 operators feasible" in out  # the final table, either way
    _no_leftovers(run)


@pytest.mark.slow
def test_a_normal_ray_run_leaves_no_group_and_no_ray_process(tmp_path):
    """One every normal run left a task loader's group behind (Ray SIGKILLs episode workers at its
    shutdown), still there 40 minutes later."""
    with OpenAITestServer() as server:
        server.responder = ScriptedAgent([replies.FAST] * 2)
        run = RunWatch(_command(server, tmp_path, "4_ReLU.py,5_GELU.py", 1, "evokernel-normal-end"), tmp_path / "err")
        try:
            run.wait_for(lambda: run.process.poll() is not None, "the run's end", limit_s=900)
            assert run.process.returncode == 0, run.stderr()[-3000:]
            # an episode worker was there (its title is ray::IDLE again once its task is done)
            assert any(command.startswith("ray::episode") or "run_episode" in command
                       for command in run.titles), "no episode worker was seen"
            _no_leftovers(run)
        finally:
            run.end()
