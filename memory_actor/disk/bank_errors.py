"""The bank's storage failures, each as one line a user can act on.

LanceDB reports a full disk as `RuntimeError: lance error: LanceError(IO): ... No space left on
device (os error 28), /root/.cargo/registry/.../commit.rs:1663:50`: the cause is in the middle
and the path at the end is a source file of the library's build machine. These helpers name
the cause and the bank instead (BankWriteFailed, BankDamaged); both are BankUnusable, so every
place that already reports an unusable bank in one line reports these too.
"""

from __future__ import annotations

import errno
import os
import re

from memory_actor.disk.lease import BankUnusable, is_local, local_path

_OS_ERROR = re.compile(r"\(os error (\d+)\)")
_SOURCE_PATH = re.compile(r",?\s*/\S*\.rs:\d+:\d+")  # where in the library's source it was raised
_LANCE_PREFIX = re.compile(r"^(lance error: )?(LanceError\(\w+\): )?")
_FULL = (errno.ENOSPC, errno.EDQUOT)


class BankWriteFailed(BankUnusable):
    """A write to the bank failed (a full disk, a file system gone read-only or away)."""


class BankDamaged(BankUnusable):
    """The bank's files are not what was written (truncated, garbled, a flipped byte)."""


def bank_place(uri: str) -> str:
    return local_path(uri) if is_local(uri) else uri


def os_errno(exc: BaseException) -> int | None:
    """The OS error behind EXC: its own errno, or the `(os error N)` a Rust library put in its text."""
    number = getattr(exc, "errno", None)
    if isinstance(number, int):
        return number
    found = _OS_ERROR.search(str(exc))
    return int(found.group(1)) if found else None


def storage_reason(exc: BaseException) -> str:
    """EXC's message on one line, without the library's prefixes and source paths."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return _LANCE_PREFIX.sub("", _SOURCE_PATH.sub("", text)).strip()


def write_failure(exc: BaseException, uri: str) -> BankWriteFailed:
    """One line for a failed write to the bank at URI."""
    if isinstance(exc, BankWriteFailed):
        return exc
    number, place = os_errno(exc), bank_place(uri)
    if number in _FULL:
        what = "no space left on device" if number == errno.ENOSPC else "disk quota exceeded"
        return BankWriteFailed(f"the memory bank cannot be written: {what} under {place} "
                               "(free some space there)")
    if number == errno.EROFS:
        return BankWriteFailed(f"the memory bank cannot be written: {place} became read-only")
    if number is not None:
        return BankWriteFailed(f"the memory bank {place} cannot be written: {os.strerror(number).lower()} "
                               f"({storage_reason(exc)})")
    return BankWriteFailed(f"the memory bank {place} cannot be written: {storage_reason(exc)}")


def damage(uri: str, what: str) -> BankDamaged:
    place = bank_place(uri)
    return BankDamaged(f"the memory bank {place} is damaged: {what}; restore it from a copy (its last "
                       f"good state), or move it aside and start afresh with another --memory")


def open_failure(exc: BaseException, uri: str) -> BankUnusable:
    """One line for a bank that could not be opened or read: a full disk where opening writes,
    else the storage's own complaint (a truncated or garbled file it could not parse)."""
    if isinstance(exc, BankUnusable):
        return exc
    if os_errno(exc) in (*_FULL, errno.EROFS):
        return write_failure(exc, uri)
    return damage(uri, f"its storage cannot read it ({storage_reason(exc)})")
