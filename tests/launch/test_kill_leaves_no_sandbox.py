"""Nothing outlives its campaign: `kill -9` of a Ray-mode `evokernel run` while a candidate
spins in its sandbox leaves no warm server, keeper, init or runner behind (issue 26.5: two of
three such kills left a sandbox process group for hours), and no warm server's folder
(issue 45.10: every campaign left two /tmp/evokernel-warm-* folders). The one-process case is
tests/npu_pool/sandbox/test_containment.py::test_nothing_outlives_a_driver_killed_outright."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from npu_pool.sandbox.leftovers import WARM_PREFIX
from tests.actors.openai_server import OpenAITestServer, ScriptedAgent
from tests.actors.replies import SIGNATURE_ARGS
from tests.launch.test_run_command import FAST_HARNESS

REPO = Path(__file__).resolve().parents[2]
SPIN = f"""```cpp
#include <cstdint>
extern "C" void kernel({SIGNATURE_ARGS}) {{
    volatile int64_t spin = 0;
    while (spin >= 0) spin = spin + 1 - (spin > (1LL << 60) ? spin : 0);
}}
```"""


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _descendants(pid: int) -> set[int]:
    found, frontier = set(), [pid]
    while frontier:
        for child in _children(frontier.pop()):
            if child not in found:
                found.add(child)
                frontier.append(child)
    return found


def _is_warm_server(pid: int) -> bool:
    try:
        return b"npu_pool.sandbox.warm_worker" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def _server_folder(pid: int) -> Path | None:
    """The warm server's own folder (evokernel-warm-*: its home, no socket in it since issue 63),
    from its command line."""
    try:
        args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return None
    homes = [a.decode() for a in args if Path(a.decode()).name.startswith(WARM_PREFIX)]
    return Path(homes[0]) if homes else None


def _sandboxes(driver: int) -> set[int]:
    """The warm servers under the driver (in Ray's workers) and everything under them."""
    servers = {pid for pid in _descendants(driver) if _is_warm_server(pid)}
    return servers | {pid for server in servers for pid in _descendants(server)}


@pytest.mark.slow
def test_kill_9_of_a_ray_run_leaves_no_sandbox(tmp_path):
    with OpenAITestServer() as server:
        server.responder = ScriptedAgent([SPIN, SPIN])
        command = [sys.executable, "-m", "launch.cli", *FAST_HARNESS, "--set", "episode.lessons=false",
                   "--set", "harness.run_timeout_s=600", "--set", "harness.call_time_limit_min_s=600",
                   "--set", "memory.actor_name=evokernel-memory-kill-test", "--set", "ray.namespace=evokernel-kill-test",
                   "run", "--ray-address", "local", "--fake-devices", "npu:1", "--tasks", "4_ReLU*",
                   "--iterations", "2", "--backend", "cpu", "--llm-base-url", server.base_url,
                   "--llm-model", server.model, "--memory", str(tmp_path / "bank"), "--out", str(tmp_path / "run")]
        log = (tmp_path / "stderr.txt").open("w+")
        run = subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=log, start_new_session=True)
        sandbox: set[int] = set()
        try:
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline and run.poll() is None:
                sandbox = _sandboxes(run.pid)
                if any(_children(pid) for pid in sandbox if _is_warm_server(pid)):  # a candidate is in
                    break
                time.sleep(0.5)
            log.seek(0)
            assert any(_children(pid) for pid in sandbox if _is_warm_server(pid)), \
                f"no candidate reached a sandbox:\n{log.read()[-3000:]}"
            time.sleep(3)  # it builds, then spins
            sandbox = _sandboxes(run.pid)
            folders = {f for f in map(_server_folder, sandbox) if f is not None}
            assert folders, "no warm server folder seen"
            os.kill(run.pid, signal.SIGKILL)
            run.wait(timeout=30)
            deadline = time.monotonic() + 60  # Ray's workers notice their raylet's end, servers their worker's
            while any(_alive(pid) for pid in sandbox) and time.monotonic() < deadline:
                time.sleep(0.5)
            left = sorted(pid for pid in sandbox if _alive(pid))
            assert left == [], [Path(f"/proc/{p}/cmdline").read_bytes()[:120] for p in left if _alive(p)]
            # issue 45.10: the servers' folders (and their candidates' sandbox folders) go with them
            deadline = time.monotonic() + 30
            while any(f.exists() for f in folders) and time.monotonic() < deadline:
                time.sleep(0.5)
            assert [f for f in folders if f.exists()] == []
        finally:
            for pid in sandbox:
                if _alive(pid):
                    os.kill(pid, signal.SIGKILL)
            try:
                os.killpg(run.pid, signal.SIGKILL)  # whatever of Ray outlived its driver
            except ProcessLookupError:
                pass
