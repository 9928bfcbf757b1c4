"""Errors that are the sandbox's or the machine's doing, not the measured code's: never cached.

A harness cache (the torch.compile baseline's) keeps what a measurement found out about a
task on this machine, for every later evaluation. An error raised because the sandbox
refused something (a Landlock read or write rule: EACCES, EPERM), because a file is missing,
because a limit was hit (memory) or the machine ran short (disk, file descriptors) says
nothing about the task: cached, it would outlive its cause (the first read rules cached
torch.compile's `PermissionError` on the task's source for good). `fault_of` names such an
error, following the chain of causes: torch.compile wraps what it hit
(`InternalTorchDynamoError` from a `PermissionError`, a C++ build error quoting the compiler's
"Permission denied").
"""

from __future__ import annotations

import re

# The words of refusals and of missing or exhausted resources (strerror texts and the
# exception names they come as), wherever a wrapper quoted them.
_FAULT_WORDS = re.compile(
    r"Permission denied|Operation not permitted|No such file or directory|Read-only file system|"
    r"No space left on device|Disk quota exceeded|Too many open files|Cannot allocate memory|"
    r"\b(?:PermissionError|FileNotFoundError|NotADirectoryError|IsADirectoryError|MemoryError|"
    r"ConfinementError)\b")
_MAX_CHAIN = 20
_SCAN_CHARS = 20_000


def fault_of(exc: BaseException) -> str | None:
    """The part of `exc` or its causes that is an environment fault ("PermissionError: ..."),
    or None when the error is the code's own (an unsupported operator, a shape error)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen and len(seen) < _MAX_CHAIN:
        seen.add(id(current))
        text = f"{type(current).__name__}: {current}"
        if isinstance(current, (OSError, MemoryError)):
            return _first_line(text)
        found = _FAULT_WORDS.search(text[:_SCAN_CHARS])
        if found is not None:
            return _line_around(text, found.start())
        current = current.__cause__ or current.__context__
    return None


def is_fault_text(text: str | None) -> bool:
    """Whether a recorded error's text names an environment fault (entries cached before this
    rule existed are measured again instead of being believed)."""
    return bool(text) and _FAULT_WORDS.search(text[:_SCAN_CHARS]) is not None


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0][:300] if text.strip() else ""


def _line_around(text: str, index: int) -> str:
    start = text.rfind("\n", 0, index) + 1
    end = text.find("\n", index)
    return text[start: end if end >= 0 else len(text)].strip()[:300]
