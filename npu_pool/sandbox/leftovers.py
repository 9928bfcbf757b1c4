"""The harness's folders in the temporary folder, and the sweep of those whose owner died.

Each folder's name carries the pid of the process that made it (`evokernel-warm-<pid>-...`,
`evokernel-sandbox-<pid>-...`). Its owner removes it; the warm server removes its own and its
orders' when it sees its client gone; but a process killed outright together with its server
(Ray kills a dead worker's children with SIGKILL) removes nothing, so every process that
starts a warm server, and every one that exits normally, removes the folders of owners that no
longer exist (issue 45.10: every campaign left two /tmp/evokernel-warm-* folders), and a
*janitor* (`python -m npu_pool.sandbox.leftovers PID`, started detached by the first warm server of a
process: a grandchild, which Ray's kill of a dead worker's children does not reach) removes
this process's folders once it is gone. This assumes the temporary folder is not shared with
processes of another PID namespace.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from npu_pool.paths import child_pythonpath

WARM_PREFIX = "evokernel-warm-"  # a warm server's folder: its socket, its log
SANDBOX_PREFIX = "evokernel-sandbox-"  # one candidate's folder


def own_prefix(prefix: str) -> str:
    """The prefix of a folder this process makes: the kind, then its pid."""
    return f"{prefix}{os.getpid()}-"


def sweep() -> int:
    """Remove our kinds of folder whose owner is gone (and that belong to this user); how many."""
    removed = 0
    for prefix in (WARM_PREFIX, SANDBOX_PREFIX):
        for folder in Path(tempfile.gettempdir()).glob(f"{prefix}*"):
            owner = folder.name[len(prefix):].split("-")[0]
            try:
                mine = folder.stat().st_uid == os.getuid()
            except OSError:
                continue
            if owner.isdigit() and mine and not _alive(int(owner)):
                shutil.rmtree(folder, ignore_errors=True)
                removed += 1
    return removed


def _alive(pid: int) -> bool:
    """Running (a zombie waiting for its parent counts as gone)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return False


def _remove_own(pid: int) -> None:
    for prefix in (WARM_PREFIX, SANDBOX_PREFIX):
        for folder in Path(tempfile.gettempdir()).glob(f"{prefix}{pid}-*"):
            shutil.rmtree(folder, ignore_errors=True)


@functools.cache
def start_janitor() -> None:
    """Once per process: a detached watcher that removes this process's folders after it died."""
    command = [sys.executable, "-m", "npu_pool.sandbox.leftovers", str(os.getpid())]
    if shutil.which("setsid"):
        command = ["setsid", "--fork", *command]  # a grandchild: out of reach of a kill of our children
    try:
        subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True, close_fds=True,
                         env={**os.environ, "PYTHONPATH": child_pythonpath(os.environ.get("PYTHONPATH"))})
    except OSError:
        pass  # the sweeps still remove them later


def main(owner: int) -> None:
    """The janitor: wait for `owner` to end, give its warm servers a moment to clean up, then
    remove what is left of its folders."""
    while _alive(owner):
        time.sleep(0.5)
    time.sleep(2.0)
    _remove_own(owner)


if __name__ == "__main__":
    main(int(sys.argv[1]))
