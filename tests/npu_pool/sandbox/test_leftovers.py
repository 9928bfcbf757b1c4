"""Nothing left in the temporary folder (issue 45.10), without a warm server: the janitor removes
the folders of the process it watches once that process is gone, and only those; the sweep
removes the folders of owners that no longer exist. (With real warm servers and clients killed
outright: tests/npu_pool/sandbox/test_runner.py; a Ray campaign killed with kill -9:
tests/launch/test_kill_leaves_no_sandbox.py, slow.)"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from npu_pool.sandbox import leftovers

ROOT = Path(__file__).resolve().parents[3]


def _folders(tmp: Path, pid: int) -> list[Path]:
    made = [tmp / f"{leftovers.WARM_PREFIX}{pid}-abc", tmp / f"{leftovers.SANDBOX_PREFIX}{pid}-def"]
    for folder in made:
        folder.mkdir()
        (folder / "server.log").write_text("x")
    return made


def test_the_janitor_removes_its_owners_folders_once_the_owner_is_gone(tmp_path):
    owner = subprocess.Popen(["sleep", "600"])
    other = subprocess.Popen(["sleep", "600"])
    try:
        theirs, others = _folders(tmp_path, owner.pid), _folders(tmp_path, other.pid)
        janitor = subprocess.Popen([sys.executable, "-m", "npu_pool.sandbox.leftovers", str(owner.pid)], cwd=ROOT,
                                   env=os.environ | {"TMPDIR": str(tmp_path)})
        time.sleep(1.0)
        assert all(f.exists() for f in theirs) and janitor.poll() is None  # it waits while the owner lives
        owner.send_signal(signal.SIGKILL)
        owner.wait()
        assert janitor.wait(timeout=60) == 0  # it looks every 0.5 s, then waits 2 s for the servers
        assert [f for f in theirs if f.exists()] == [] and all(f.exists() for f in others)
    finally:
        for process in (owner, other):
            process.kill()
            process.wait()


def test_the_sweep_removes_only_folders_whose_owner_no_longer_exists(tmp_path, monkeypatch):
    gone = subprocess.Popen(["true"])
    gone.wait()  # reaped: its pid names no process now
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    dead = _folders(tmp_path, gone.pid)
    alive = _folders(tmp_path, os.getpid())
    unnamed = tmp_path / f"{leftovers.WARM_PREFIX}x1y2z3"  # an older version's name, no pid: not ours to judge
    unnamed.mkdir()
    assert leftovers.sweep() == 2
    assert [f for f in dead if f.exists()] == [] and all(f.exists() for f in alive) and unnamed.exists()
