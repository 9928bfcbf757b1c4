"""The per-node gate of CPU device slots: the slots of a node share its cores, so a candidate
is timed alone while verifications may run together.

A reader-writer lock between processes, from two `flock`ed files in the node's temporary
folder (local to the node, never a shared file system): every sandboxed run holds the
node shared; a run that reaches its timed trials trades that for the node alone. Writers
are preferred: a waiting writer holds the turnstile, which new readers must pass.
A process that dies drops its locks (the kernel releases them), so nothing stays stuck.
"""

from __future__ import annotations

import fcntl
import os
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


class ExclusiveHold:
    def __init__(self, fd: int, lock: NodeLock):
        self.fd: int | None = fd
        self.lock, self.since = lock, time.time()

    def release(self) -> None:
        if self.fd is not None:
            self.lock.holds.append(("exclusive", self.since, time.time()))  # stamped while still held
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None


class NodeLock:
    """Many sandboxed runs at once, or one timing alone, across every process of this node."""

    def __init__(self, folder: Path | None = None):
        folder = folder or Path(tempfile.gettempdir()) / f"evokernel-node-{os.getuid()}"
        folder.mkdir(parents=True, exist_ok=True)
        self.main, self.turnstile = folder / "node.lock", folder / "turnstile.lock"
        self._shared_fd: int | None = None
        self._shared_since = 0.0
        self.holds: list[tuple[str, float, float]] = []  # (shared|exclusive, start, end), wall clock

    def _open(self, path: Path) -> int:
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)

    @contextmanager
    def shared(self) -> Iterator[None]:
        turnstile = self._open(self.turnstile)
        try:
            fcntl.flock(turnstile, fcntl.LOCK_EX)  # waits behind a writer that wants the node
        finally:
            os.close(turnstile)  # closing releases it
        self._shared_fd = self._open(self.main)
        fcntl.flock(self._shared_fd, fcntl.LOCK_SH)
        self._shared_since = time.time()
        try:
            yield
        finally:
            self._drop_shared()

    def _drop_shared(self) -> None:
        if self._shared_fd is not None:
            self.holds.append(("shared", self._shared_since, time.time()))
            os.close(self._shared_fd)
            self._shared_fd = None

    def exclusive(self) -> ExclusiveHold:
        """Give up this process's shared hold (if any) and take the node alone; blocks."""
        self._drop_shared()
        turnstile = self._open(self.turnstile)
        try:
            fcntl.flock(turnstile, fcntl.LOCK_EX)
            fd = self._open(self.main)
            fcntl.flock(fd, fcntl.LOCK_EX)
        finally:
            os.close(turnstile)
        return ExclusiveHold(fd, self)
