"""Verdict text is data, not a channel: bound it and scrub secrets out of it.

What a candidate's process hands back (exception text, stderr, compiler output) is written
by untrusted code. Before it reaches a memory item, a lesson, a prompt, a log line or a
report it goes through `scrub`: every configured secret (the LLM API key registered by the
launcher, the Ray token, the value of any environment variable named *_KEY, *_TOKEN,
*_PASSWORD or *SECRET*, at least 8 characters) and anything shaped like a credential
(private-key blocks, AWS, OpenAI/Anthropic, GitHub, Slack, Hugging Face, Google keys, JWTs,
bearer tokens, `password=...` assignments) becomes "[redacted]". Compiler output keeps only
the diagnostics about the candidate's own source (`own_diagnostics`): a compiler that read
another file quotes that file in its messages.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path

REDACTED = "[redacted]"
MIN_SECRET_CHARS = 8
TEXT_LIMIT = 4000  # characters of verdict details kept (reason: a line)
_SECRET_ENV = re.compile(r"(_KEY|_TOKEN|_PASSWORD|_PASSWD|SECRET)$|SECRET", re.IGNORECASE)
_CREDENTIAL_SHAPES = [
    re.compile(r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----.*?(-----END[A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----|\Z)",
               re.DOTALL),
    re.compile(r"\b(AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b"),
    re.compile(r"\bsk-[A-Za-z0-9_\-]{12,}"),
    re.compile(r"\b(ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}|\bgithub_pat_[A-Za-z0-9_]{20,}"),
    re.compile(r"\bxox[abposr]-[A-Za-z0-9\-]{10,}"),
    re.compile(r"\bhf_[A-Za-z0-9]{20,}"),
    re.compile(r"\bAIza[0-9A-Za-z_\-]{30,}"),
    re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),  # a JWT
    re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=\-]{12,}"),
]
# `api_key = "..."`, `password: ...`: the value goes, the name stays (it says what was there).
_ASSIGNMENT = re.compile(r"(?i)\b([\w.-]*(?:api[_-]?key|secret|token|passw(?:or)?d)[\w.-]*)(\s*[:=]\s*[\"']?)"
                         r"([^\s\"',;]{8,})")
_registered: set[str] = set()


def register(*secrets: str | None) -> None:
    """Remember secrets this process knows (the launcher registers the LLM API key)."""
    _registered.update(s for s in secrets if s and len(s) >= MIN_SECRET_CHARS)


def configured_secrets() -> list[str]:
    """Every secret value known here, longest first (so a key is not half-replaced)."""
    found = set(_registered)
    found.update(v for k, v in os.environ.items() if _SECRET_ENV.search(k) and len(v) >= MIN_SECRET_CHARS)
    found.update(_ray_tokens())
    return sorted((s for s in found if len(s) >= MIN_SECRET_CHARS), key=len, reverse=True)


def _ray_tokens() -> list[str]:
    """Ray's cluster token: from RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH or ~/.ray/auth_token."""
    tokens = [os.environ.get("RAY_AUTH_TOKEN", "").strip()]
    for path in (os.environ.get("RAY_AUTH_TOKEN_PATH"), str(Path.home() / ".ray" / "auth_token")):
        if path:
            tokens.append(_token_file(path))
    return [t for t in tokens if t]


_token_files: dict[str, tuple[int, str]] = {}


def _token_file(path: str) -> str:
    """A token file's text, read again only when it changes (log lines are scrubbed too)."""
    try:
        changed = os.stat(path).st_mtime_ns
        if path not in _token_files or _token_files[path][0] != changed:
            _token_files[path] = (changed, Path(path).read_text()[:4096].strip())
        return _token_files[path][1]
    except (OSError, UnicodeDecodeError):
        return ""


def scrub(text: str, limit: int | None = None) -> str:
    """`text` with every configured secret and credential-shaped string redacted, then bounded."""
    if not text:
        return text
    for secret in configured_secrets():
        text = text.replace(secret, REDACTED)
    for shape in _CREDENTIAL_SHAPES:
        text = shape.sub(REDACTED, text)
    text = _ASSIGNMENT.sub(lambda m: f"{m[1]}{m[2]}{REDACTED}", text)
    return bound(text, limit) if limit is not None else text


def bound(text: str, limit: int = TEXT_LIMIT) -> str:
    """At most `limit` characters: the head, a marker, and the tail (the end says how it ended)."""
    if len(text) <= limit:
        return text
    marker = f"\n[... {len(text) - limit} characters cut ...]\n"
    head = (limit - len(marker)) * 2 // 3
    tail = limit - len(marker) - head
    return text[:head] + marker + (text[-tail:] if tail > 0 else "")


# `path:line[:col]: ` at the start of a line (g++, clang, nvcc, bisheng), and what follows it.
_LOCATED = re.compile(r"^(?:In file included from\s+|\s*from\s+)?(?P<file>[^\s:][^:]*?):"
                      r"(?:\d+(?::\d+)?[:,]| (?:In|At) )")
# g++'s echo of the offending line (`   12 |   code`) and its caret line (`      |   ^~~`).
_ECHO = re.compile(r"^\s*\d*\s*\|")
# The file names our routes compile the candidate's source under: the kernel route's
# `#line 1 "kernel.cpp"`, torch's load_inline (main.cpp, cuda.cu), Ascend C (kernel.cpp).
OWN_SOURCE_NAMES = frozenset({"kernel.cpp", "kernel.cu", "main.cpp", "cuda.cu", "main.cu"})


def is_own_source(file: str, own_prefixes: Iterable[str] = ()) -> bool:
    """Whether a compiler message about `file` is about the candidate's own source: one of
    the names our routes give it, or a file under one of `own_prefixes` (its sandbox folder)."""
    if os.path.basename(file) in OWN_SOURCE_NAMES:
        return True
    path = os.path.normpath(file)
    return any(prefix and path.startswith(prefix) for prefix in own_prefixes)


def own_diagnostics(log: str, own_prefixes: Iterable[str] = ()) -> str:
    """The lines of a compiler log about the candidate's own source. A located line about
    any other file (a header, a file the candidate #included) goes, with the source lines
    the compiler echoed after it: they may quote that file. Lines without a location (the
    build's own words, a Python traceback) stay."""
    prefixes = list(own_prefixes)
    kept: list[str] = []
    keeping = True
    for line in log.splitlines():
        located = _LOCATED.match(line)
        if located:
            keeping = is_own_source(located["file"], prefixes)
        elif not _ECHO.match(line):
            keeping = True
        if keeping:
            kept.append(line)
        elif not kept or kept[-1] != "[a diagnostic about another file was left out]":
            kept.append("[a diagnostic about another file was left out]")
    return "\n".join(kept)
