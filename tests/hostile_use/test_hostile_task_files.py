"""Hostile task files through the real `evokernel tasks check` command (issue 55): a task file's
code runs only in the task loader's confined child. One that writes outside its folder writes
nothing, one that sends a datagram home sends nothing, one that forks at import fails in one
line and leaves no process; a good task beside them still loads.

Each hostile task is bounded by construction (at most 200 `sleep` children, one datagram, one
small file), so a regression fails the test without harming the machine.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
TAIL = """
class Model(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(64)]


def get_init_inputs():
    return []
"""


def _sleepers(tag: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "cmdline").read_bytes() == f"sleep\0{tag}\0".encode():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def test_tasks_check_keeps_hostile_task_files_confined(tmp_path):
    suite, elsewhere = tmp_path / "suite", tmp_path / "elsewhere"
    suite.mkdir()
    elsewhere.mkdir()
    marker = elsewhere / "written.txt"
    listener = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    listener.bind(("127.0.0.1", 0))
    listener.settimeout(1.0)
    tag = f"{61 + os.getpid() % 1000}"  # `sleep <tag>`: this test's children, told from anyone else's
    (suite / "1_Good.py").write_text("import torch\n" + TAIL)
    (suite / "2_Writes.py").write_text(f"import torch\ntry:\n    open({str(marker)!r}, 'w').write('x')\n"
                                       "except OSError:\n    pass\n" + TAIL)
    (suite / "3_PhonesHome.py").write_text(
        "import socket\nimport torch\ntry:\n    socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', "
        f"('127.0.0.1', {listener.getsockname()[1]}))\nexcept OSError:\n    pass\n" + TAIL)
    (suite / "4_Forks.py").write_text("import os\nimport torch\nfor _ in range(200):\n    if os.fork() == 0:\n"
                                      f"        os.execvp('sleep', ['sleep', '{tag}'])\n" + TAIL)
    env = {**os.environ, "EVOKERNEL_HARNESS__PROCESS_LIMIT": "64", "EVOKERNEL_HARNESS__TASK_LOAD_TIMEOUT_S": "60"}
    try:
        run = subprocess.run([sys.executable, "-m", "launch.cli", "tasks", "check", str(suite)], cwd=REPO, env=env,
                             capture_output=True, text=True, timeout=600)
        with pytest.raises(TimeoutError):
            listener.recvfrom(16)
        deadline = time.monotonic() + 30
        while (left := _sleepers(tag)) and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        listener.close()
        for pid in _sleepers(tag):  # only if the bound failed: never leave them on a shared machine
            os.kill(pid, 9)
    lines = run.stdout.splitlines()
    assert run.returncode == 1 and lines[-1] == "3 of 4 tasks loaded, fitted and ran", run.stdout + run.stderr
    [forks] = [line for line in lines if "4_Forks" in line]
    assert forks.startswith("FAIL") and "more processes than allowed" in forks and "64 tasks" in forks
    assert not marker.exists()
    assert left == [], "the forking task's children outlived the check"
