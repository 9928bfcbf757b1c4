"""One run per run folder at a time: an OS lock on RUN_DIR/run.lock, with a record of its holder.

Two processes writing one run folder (two `--resume`s of it, say) would both append to
attempts.jsonl and each rewrite summary.json from its own state: the same operator's attempts
twice, totals that disagree with them. So `evokernel run` takes `flock(LOCK_EX | LOCK_NB)` on
the folder's lock file before it changes anything there (or in the bank, which a resume edits
first) and holds it to the end; a second one is refused in one line naming the holder. The
kernel drops the lock when its holder dies, however it dies: a killed run never leaves its
folder locked, and `--resume` after a kill -9 just works.
"""

from __future__ import annotations

import errno
import fcntl
import os
from pathlib import Path

from memory_actor.disk.lease import holder, lease_record, read_lease, release_lock, write_record

LOCK_FILE = "run.lock"


class RunFolderInUse(Exception):
    """Another process is writing the run folder."""


class RunFolderLock:
    """The run folder's lock, held from `acquire()` to `release()` (or the process's end)."""

    def __init__(self, run_dir: Path, owner: str):
        self.run_dir, self.owner = Path(run_dir), owner
        self.path = self.run_dir / LOCK_FILE
        self._fd: int | None = None

    def acquire(self) -> RunFolderLock:
        self.run_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise RunFolderInUse(in_use_message(self.run_dir, read_lease(str(self.path)))) from None
            raise
        try:
            write_record(fd, lease_record(self.owner))
        except OSError:  # a full disk: the lock holds all the same, only the record is missing
            pass
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        release_lock(fd)

    def __enter__(self) -> RunFolderLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def in_progress(run_dir: Path) -> bool:
    """Whether a live process holds RUN_DIR's lock (a campaign running there; its own live
    report asks this too, and is answered yes: a second descriptor's lock conflicts with it)."""
    try:
        fd = os.open(Path(run_dir) / LOCK_FILE, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError as exc:
        return exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES)
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def in_use_message(run_dir: Path, record: dict) -> str:
    return (f"the run folder {run_dir} is in use by {holder(record)}: one process writes a run folder at a time; "
            f"let it finish (or stop it), then continue with `evokernel run --resume {run_dir}`")
