"""SIGTERM stops a Ray-mode `evokernel run` as Ctrl-C does (issue 16).

Ray's `ray.init` installs its own SIGTERM handler (exit on the spot, under its core worker's
fatal-signal handler): a run killed by a batch scheduler, `timeout` or `ray job stop` used to
die without the clean stop. Here a real `evokernel run` process, on a local Ray instance with
the local-model stand-in busy answering, gets SIGTERM and must leave summary.json marked
interrupted, print the resume hint, exit 130 and stop the model server.
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

from tests.launch.local_llm_standin import install_standin, port_is_closed, recorded_requests
from tests.launch.test_local_llm_run import FAST_HARNESS, RELU_KERNEL

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.parametrize("whole_group", [False, True], ids=["driver", "process-group"])
def test_sigterm_stops_a_ray_run_cleanly(tmp_path, monkeypatch, whole_group):
    """About a minute: a fresh process starts Ray, the device pool and the memory actor. With
    `whole_group` the signal goes to the run's whole process group, as `timeout`, a shell's job
    control and systemd's default stop send it: Ray's own processes get it at the same moment."""
    folder = install_standin(tmp_path, monkeypatch)
    monkeypatch.setenv("STANDIN_REPLY", RELU_KERNEL)
    monkeypatch.setenv("STANDIN_DELAY_S", "120")  # the run is waiting on the model when SIGTERM comes
    monkeypatch.delenv("EVOKERNEL_LLM__BASE_URL", raising=False)
    run_dir = tmp_path / "run"
    command = [sys.executable, "-m", "launch.cli", *FAST_HARNESS, "--set", "llm.candidate_format=kernel",
               "--set", "episode.lessons=false", "--set", f"harness.build_cache_dir={tmp_path / 'build'}",
               "--set", "memory.actor_name=evokernel-memory-sigterm-test", "--set", "ray.namespace=evokernel-sigterm-test",
               "run", "--ray-address", "local", "--fake-devices", "npu:1", "--tasks", "4_ReLU*", "--iterations", "2",
               "--backend", "cpu", "--memory", str(tmp_path / "bank"), "--out", str(run_dir)]
    log = (tmp_path / "stderr.txt").open("w+")
    run = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, stderr=log, text=True, env=os.environ.copy(),
                           start_new_session=whole_group)
    try:
        # a liveness bound, not a timing: Ray, the pools and the memory actor took over 4 min to
        # come up at load 19 on 2 cores (a minute idle)
        deadline = time.monotonic() + 600
        while not recorded_requests(folder) and time.monotonic() < deadline and run.poll() is None:
            time.sleep(0.5)
        assert recorded_requests(folder), f"the run never asked the model:\n{_tail(log)}"
        if whole_group:
            os.killpg(run.pid, signal.SIGTERM)
        else:
            run.send_signal(signal.SIGTERM)
        # A liveness bound, not a timing: a stop that never ends fails here. A stop left waiting on
        # Ray's stopped processes ends when Ray's core worker kills the driver (about 60 s after
        # losing its GCS): the exit code 130 below is the clean stop's alone.
        out, _ = run.communicate(timeout=120)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
        if whole_group:
            _kill_group(run.pid)
    err = _tail(log)
    assert run.returncode == 130, err
    assert f"evokernel run --resume {run_dir}" in err
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["interrupted"] is True and summary["finished_at"], summary
    assert summary["mode"] == "ray" and summary["planned"] == ["4_ReLU"]
    [operator] = summary["operators"]
    assert operator["task"] == "4_ReLU" and operator["stopped_by"] == "interrupted"
    argv = json.loads((folder / "argv.json").read_text())
    assert port_is_closed(f"http://127.0.0.1:{argv['port']}/v1"), "the local model server outlived the run"
    assert "0/1 operators feasible" in out


def _kill_group(pgid: int) -> None:
    """Whatever of the run's group outlived it (a Ray process) goes; the group may be gone."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _tail(log, chars: int = 4000) -> str:
    log.flush()
    log.seek(0)
    return log.read()[-chars:]
