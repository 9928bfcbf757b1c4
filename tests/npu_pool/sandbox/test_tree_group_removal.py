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


def test_the_groups_of_a_dead_owner_are_removed_at_a_runs_end_with_what_runs_in_them():
    """Issue 63: Ray SIGKILLs an episode worker at the end of every run, so the task loader's group
    it made was never removed (one was seen 40 minutes after a normal run). Here a real owner makes
    a group, puts a long sleeper in it (as the loader child is) and dies without removing it:
    `sweep_dead_owners` kills the sleeper and removes the group; a live owner's group is left."""
    import sys

    owner = subprocess.run(
        [sys.executable, "-c", "import subprocess\n"
         "from npu_pool.sandbox import tree_limits\n"
         "group = tree_limits.create(64, 16)\n"
         "if group is None: print('none'); raise SystemExit\n"
         "joins = ' '.join(group.join_files())\n"
         "child = subprocess.Popen(['sh', '-c', f'for f in {joins}; do echo $$ > $f; done; exec sleep 600'],\n"
         "                         start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
         "import time; time.sleep(0.5)\n"
         "print(' '.join(str(f) for f in group.folders), child.pid)\n"],
        capture_output=True, text=True, timeout=120, cwd=Path(__file__).resolve().parents[3])
    assert owner.returncode == 0, owner.stderr
    if owner.stdout.strip() == "none":
        pytest.skip("no writable cgroup here: no group to leave behind")
    *folders, sleeper = owner.stdout.split()
    folders = [Path(f) for f in folders]
    mine = tree_limits.create(64, 16)  # a live owner's: not to be touched
    try:
        assert all(f.is_dir() for f in folders) and Path(f"/proc/{sleeper}").exists()
        removed = tree_limits.sweep_dead_owners(wait_s=10)
        assert {str(f) for f in folders} <= set(removed)  # (others' dead owners' groups go too: all orphans)
        assert not any(f.exists() for f in folders)
        deadline = time.monotonic() + 10  # killed, then reaped by init
        while Path(f"/proc/{sleeper}").exists() and "Z" not in _state(sleeper) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not Path(f"/proc/{sleeper}").exists() or "Z" in _state(sleeper)
        assert mine is not None and all(f.is_dir() for f in mine.folders)
    finally:
        if mine is not None:
            mine.remove()
        if Path(f"/proc/{sleeper}").exists() and "Z" not in _state(sleeper):  # the sweep failed: ours to end
            os.kill(int(sleeper), 9)


def _state(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return ""


def test_a_zombie_owners_groups_are_swept():
    """An owner that has exited but is not reaped yet (a Ray worker at the run's end, its raylet
    gone) is dead: at the run's last sweep it still had a /proc entry, so its group was left for
    good once it was reaped."""
    import sys

    owner = subprocess.Popen(
        [sys.executable, "-c", "from npu_pool.sandbox import tree_limits\n"
         "group = tree_limits.create(64, 16)\n"
         "print('none' if group is None else ' '.join(str(f) for f in group.folders), flush=True)\n"],
        stdout=subprocess.PIPE, text=True, cwd=Path(__file__).resolve().parents[3])
    try:
        line = owner.stdout.readline().strip()
        if line == "none":
            pytest.skip("no writable cgroup here: no group to leave behind")
        folders = [Path(f) for f in line.split()]
        deadline = time.monotonic() + 30  # exited, and this test, its parent, does not reap it yet
        while "Z" not in _state(str(owner.pid)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert "Z" in _state(str(owner.pid)) and all(f.is_dir() for f in folders)
        removed = tree_limits.sweep_dead_owners(wait_s=10)
        assert {str(f) for f in folders} <= set(removed) and not any(f.exists() for f in folders)
    finally:
        owner.wait(30)
        owner.stdout.close()
