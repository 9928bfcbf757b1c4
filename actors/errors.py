"""An error as one readable line: for summary.json, the final table and the status line.

A failure that crossed Ray arrives as a RayTaskError whose text is the remote traceback, with
terminal colour codes; users need its last line, the traceback belongs in the log.
"""

from __future__ import annotations

import re

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
LIMIT = 300


def error_text(text: str, limit: int = LIMIT) -> str:
    """TEXT without colour codes, reduced to its last meaningful line (a traceback's `Type: message`)."""
    lines = [line.strip() for line in _ANSI.sub("", text).splitlines() if line.strip()]
    if not lines:
        return ""
    line = lines[-1] if len(lines) > 1 and _looks_like_traceback(lines) else " ".join(lines)
    return line if len(line) <= limit else line[: limit - 3] + "..."


def error_line(exc: BaseException, limit: int = LIMIT) -> str:
    """`Type: message` of EXC in one line; for a Ray error, of the exception raised remotely."""
    cause = getattr(exc, "cause", None)  # ray.exceptions.RayTaskError keeps the remote exception
    if isinstance(cause, BaseException) and cause is not exc:
        exc = cause
    message = error_text(str(exc), limit)
    name = type(exc).__name__
    if not message:
        return name
    return message if message.startswith(name) else error_text(f"{name}: {message}", limit)


def error_message(exc: BaseException, limit: int = LIMIT) -> str:
    """EXC's own message in one line (for exceptions whose message says it all: our LLM errors)."""
    cause = getattr(exc, "cause", None)
    if isinstance(cause, BaseException) and cause is not exc:
        exc = cause
    return error_text(str(exc), limit) or type(exc).__name__


def _looks_like_traceback(lines: list[str]) -> bool:
    return any(line.startswith(("Traceback", "File \"", "ray::")) or "Traceback (most recent" in line
               for line in lines)
