"""One writer per bank: an OS lock in the bank folder, and a lease record naming its holder.

A bank's values live in the memory of the process that writes it (journal.py): two writers
would each keep their own copy and their own sequence numbers, and the last fold would win.
So a process that opens a bank to write takes `flock(LOCK_EX | LOCK_NB)` on BANK/writer.lock
and writes into it who holds it (host, pid, owner: a run id or a command, since when). A second
writer, in any process on any machine that sees the folder, is refused with that record
(BankInUse). The kernel drops the lock when the holder dies, however it dies, so a killed run
never leaves a bank locked. Readers (`evokernel memory stats/search/show/export`) take no lock.

Within one process a bank may be opened more than once (the lock is counted, not taken twice).
Object-store banks (s3://, gs://, az://) have no lock: one campaign per such bank is up to the
user (docs/memory.md).
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import socket
import stat
import threading
from datetime import UTC, datetime
from typing import Any

LOCK_FILE = "writer.lock"


class BankUnusable(Exception):
    """The bank path cannot be used to write: a file, a read-only file system, no permission."""


class BankInUse(BankUnusable):
    """Another process holds the bank's writer lock."""


def is_local(uri: str) -> bool:
    """A plain path (or file://): a folder this machine can lock; anything else is an object store."""
    return "://" not in uri or uri.startswith("file://")


def local_path(uri: str) -> str:
    return os.path.abspath(os.path.expanduser(uri[len("file://"):] if uri.startswith("file://") else uri))


def check_writable(uri: str) -> None:
    """Raise BankUnusable (one line) when the bank folder at `uri` cannot be created or written."""
    if not is_local(uri):
        return
    path = local_path(uri)
    existing = path
    while not os.path.exists(existing):
        parent = os.path.dirname(existing)
        if parent == existing:
            break
        existing = parent
    if not os.path.isdir(existing):
        where = "is a file" if existing == path else f"is inside {existing}, which is a file"
        raise BankUnusable(f"the memory bank path {path} {where}, not a folder: pick a folder with --memory")
    if os.statvfs(existing).f_flag & os.ST_RDONLY:
        raise BankUnusable(f"the memory bank {path} is on a read-only file system: a run needs to write it "
                           "(`evokernel memory stats/search/show/export` can read it there)")
    if not os.access(existing, os.W_OK | os.X_OK):
        what = "the bank folder" if existing == path else f"{existing}, where the bank would be created,"
        raise BankUnusable(f"no permission to write the memory bank {path}: {what} is not writable by this user")


class _Held:
    def __init__(self, fd: int):
        self.fd = fd
        self.count = 1


_held: dict[str, _Held] = {}
_held_lock = threading.Lock()


class BankLease:
    """The writer lock of a local bank, held from `acquire()` to `release()` (or the process's end)."""

    def __init__(self, uri: str, owner: str | None = None):
        self.uri = uri
        self.path = os.path.join(local_path(uri), LOCK_FILE)
        self.owner = owner
        self.held = False

    def acquire(self) -> None:
        """Take the lock or raise BankInUse naming the holder (BankUnusable when the folder cannot be written)."""
        if self.held:
            return
        with _held_lock:
            held = _held.get(self.path)
            if held is not None:
                held.count += 1
                self.held = True
                return
            check_writable(self.uri)
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            except OSError as exc:
                raise _unusable(os.path.dirname(self.path), exc) from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                os.close(fd)
                if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    raise BankInUse(in_use_message(os.path.dirname(self.path), read_lease(self.path))) from None
                raise
            try:
                write_record(fd, lease_record(self.owner))
            except OSError:  # a full disk: the caller says so in one line; the lock must not stay held
                os.close(fd)
                raise
            _held[self.path] = _Held(fd)
            self.held = True

    def release(self) -> None:
        if not self.held:
            return
        self.held = False
        with _held_lock:
            held = _held.get(self.path)
            if held is None:
                return
            held.count -= 1
            if held.count:
                return
            del _held[self.path]
            release_lock(held.fd)


def probe(uri: str) -> None:
    """Raise BankUnusable / BankInUse now if a writer could not open the bank (takes and drops the lock)."""
    check_writable(uri)
    if not is_local(uri) or not os.path.isdir(local_path(uri)):
        return  # created by the run: nobody can hold it yet
    lease = BankLease(uri)
    lease.acquire()
    lease.release()


def lease_record(owner: str | None) -> dict[str, Any]:
    return {"host": socket.gethostname(), "pid": os.getpid(), "owner": owner or "unknown",
            "since": datetime.now(UTC).isoformat(timespec="seconds")}


def read_lease(path: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as stream:
            record = json.loads(stream.read() or "{}")
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def holder(record: dict[str, Any]) -> str:
    """Who a lock record names: owner, host, pid and since when (a run folder's lock too)."""
    if not record:
        return "another process"
    return (f"{record.get('owner', 'unknown')} (host {record.get('host', '?')}, pid {record.get('pid', '?')}, "
            f"since {record.get('since', '?')})")


def in_use_message(bank: str, record: dict[str, Any]) -> str:
    return (f"the memory bank {bank} is in use by {holder(record)}: one campaign writes a bank at a time; "
            "wait for it to finish, or pick another --memory")


def write_record(fd: int, record: dict[str, Any]) -> None:
    """Replace the lock file's record of its holder."""
    data = json.dumps(record).encode()
    os.ftruncate(fd, 0)
    os.pwrite(fd, data, 0)


def release_lock(fd: int) -> None:
    """Empty the lock file's record (no holder: an old record would only mislead) and close it,
    which drops the lock."""
    try:
        os.ftruncate(fd, 0)
    except OSError:
        pass
    os.close(fd)


def _unusable(folder: str, exc: OSError) -> BankUnusable:
    if exc.errno == errno.EROFS:
        return BankUnusable(f"the memory bank {folder} is on a read-only file system: a run needs to write it "
                            "(`evokernel memory stats/search/show/export` can read it there)")
    if exc.errno in (errno.EACCES, errno.EPERM):
        return BankUnusable(f"no permission to write the memory bank {folder}")
    if exc.errno in (errno.ENOTDIR, errno.EEXIST) or (os.path.exists(folder) and not stat.S_ISDIR(os.stat(folder).st_mode)):
        return BankUnusable(f"the memory bank path {folder} is a file, not a folder: pick a folder with --memory")
    return BankUnusable(f"cannot use the memory bank {folder}: {exc.strerror or exc}")
