"""A candidate's control group is removed even when its last process dies late (issue 55: an
empty per-verify group lingered until the next verify, whose sweep takes only dead owners'
groups). A process the freezer holds does not die on SIGKILL until thawed: the group's removal
fails at first, and is done once the process is gone (at the next create, or at exit)."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from npu_pool.sandbox import tree_limits

FREEZER = Path("/sys/fs/cgroup/freezer")


def _freezer_group() -> Path | None:
    folder = FREEZER / f"evokernel-test-freeze-{os.getpid()}"
    try:
        folder.mkdir()
    except OSError:
        return None
    return folder


def test_a_group_whose_last_process_dies_late_is_removed_once_it_is_gone():
    group = tree_limits.create(64, 16)
    freezer = _freezer_group()
    if group is None or freezer is None:
        if group is not None:
            group.remove()
        pytest.skip("needs a writable cgroup for the candidate and the v1 freezer to hold a process")
    joins = [*group.join_files(), str(freezer / "cgroup.procs")]
    sleeper = subprocess.Popen(["sh", "-c", f"for f in {' '.join(joins)}; do echo $$ > $f; done; exec sleep 30"])
    try:
        deadline = time.monotonic() + 10
        while str(sleeper.pid) not in (freezer / "cgroup.procs").read_text().split():
            assert time.monotonic() < deadline
            time.sleep(0.05)
        (freezer / "freezer.state").write_text("FROZEN")
        group.remove()  # SIGKILL waits for the thaw: the folders cannot go yet
        assert all(folder.exists() for folder in group.folders)
        (freezer / "freezer.state").write_text("THAWED")
        sleeper.wait(timeout=10)
        tree_limits.remove_unremoved(wait_s=5)  # what the next create() and this process's exit do
        assert not any(folder.exists() for folder in group.folders), "an empty candidate group lingers"
    finally:
        (freezer / "freezer.state").write_text("THAWED")
        sleeper.kill()
        sleeper.wait()
        for folder in group.folders:
            if folder.exists():
                folder.rmdir()
        freezer.rmdir()
