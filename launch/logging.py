"""structlog, configured once: readable on a terminal, JSON in runs; secrets never printed."""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import Iterable
from typing import Any

import structlog

from npu_pool import redaction

REDACTED = "**********"
_SECRET_KEY = re.compile(r"(api[_-]?key|token|secret|password|authorization)", re.IGNORECASE)
# Well-known credential shapes, caught even when logged under an innocent key.
_SECRET_VALUE = re.compile(r"\b(sk-[A-Za-z0-9_\-]{8,}|Bearer\s+[A-Za-z0-9._\-]{8,})")


class SecretRedactor:
    """A structlog processor that hides secrets by key name, by known value and by shape."""

    def __init__(self, known_secrets: Iterable[str] = ()):
        self.known_secrets = [s for s in known_secrets if s and len(s) >= 4]

    def add(self, secret: str | None) -> None:
        if secret and len(secret) >= 4 and secret not in self.known_secrets:
            self.known_secrets.append(secret)
        redaction.register(secret)  # verdict text, lessons and prompts are scrubbed of it too

    def _scrub(self, value: Any) -> Any:
        if isinstance(value, str):
            for secret in self.known_secrets:
                value = value.replace(secret, REDACTED)
            value = redaction.scrub(value)  # the environment's secrets, the Ray token, credential shapes
            return _SECRET_VALUE.sub(REDACTED, value)
        if isinstance(value, dict):
            # Only text under a secret-looking key is hidden: token *counts* stay readable.
            return {
                k: (REDACTED if _SECRET_KEY.search(str(k)) and isinstance(v, (str, bytes)) and v else self._scrub(v))
                for k, v in value.items()
            }
        if isinstance(value, (list, tuple)):
            return type(value)(self._scrub(v) for v in value)
        return value

    def __call__(self, logger: Any, method_name: str, event_dict: dict[str, Any]) -> dict[str, Any]:
        return self._scrub(event_dict)


class _CurrentStderr:
    """A file-like object that writes to whatever sys.stderr is at the time of writing.

    structlog's PrintLogger binds one stream at creation; a stream swapped out later (pytest's
    capture, a redirect) would then be written to after it was closed.
    """

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


class _StderrLoggerFactory:
    def __call__(self, *args: Any) -> structlog.PrintLogger:
        return structlog.PrintLogger(file=_CurrentStderr())


redactor = SecretRedactor()
_resolved: tuple[bool, str] = (True, "info")  # what configure_logging last settled on (json, level)


def configure_logging(json_logs: bool | None = None, level: str = "info", secrets: Iterable[str] = ()) -> None:
    """Configure structlog (and stdlib logging under it). Safe to call more than once."""
    global _resolved
    for secret in secrets:
        redactor.add(secret)
    if json_logs is None:
        json_logs = not sys.stderr.isatty()
    _resolved = (json_logs, level)
    numeric_level = logging.getLevelName(level.upper())
    if not isinstance(numeric_level, int):
        raise ValueError(f"unknown log level: {level}")
    renderer: Any = (
        structlog.processors.JSONRenderer() if json_logs else structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            redactor,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric_level),
        logger_factory=_StderrLoggerFactory(),
        cache_logger_on_first_use=False,
    )
    logging.basicConfig(level=max(numeric_level, logging.WARNING), stream=sys.stderr)


def child_logging_args() -> tuple[bool, str, list[str]]:
    """configure_logging's arguments for a spawned child, which starts with structlog's defaults:
    the format this process settled on (JSON in a run's log file), its level and its secrets."""
    return _resolved[0], _resolved[1], list(redactor.known_secrets)
