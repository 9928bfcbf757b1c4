"""Small JSON caches of the harness (device peaks, torch.compile baselines).

Inside the sandbox a candidate's process may not write outside its own folder, so there the
caches are read from disk and new entries are kept in memory (`defer_writes`), travel back
in the worker's result, and the trusted parent writes them (`apply`). Outside a sandbox,
entries are written at once. An entry is what was measured: an error the sandbox or the
machine caused is never kept (npu_pool.gates.infra_faults; `forget` takes back a placeholder).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

_deferred: dict[str, dict[str, Any]] | None = None
_on_record: Callable[[], None] | None = None


def defer_writes(on_record: Callable[[], None] | None = None) -> None:
    """From now on this process keeps new entries in memory (see `pending`); `on_record` is
    called after each, so the worker can pass them on at once (it may be killed next)."""
    global _deferred, _on_record
    _deferred, _on_record = {}, on_record


def pending() -> dict[str, dict[str, Any]]:
    """Entries recorded since `defer_writes`, by cache file: what the parent should write."""
    return {path: dict(entries) for path, entries in (_deferred or {}).items()}


def read_json(path: Path) -> dict[str, Any]:
    """A JSON object from `path`; empty when the file is missing or unreadable."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def load(path: Path) -> dict[str, Any]:
    cached = read_json(path)
    if _deferred is not None:
        cached.update(_deferred.get(str(path), {}))
    return cached


def record(path: Path, key: str, value: Any) -> None:
    if _deferred is not None:
        _deferred.setdefault(str(path), {})[key] = value
        if _on_record is not None:
            _on_record()
        return
    apply({str(path): {key: value}})


def forget(path: Path, key: str) -> None:
    """Take back an entry this process recorded (deferred: it never reaches the parent; else
    it leaves the file)."""
    if _deferred is not None:
        if _deferred.get(str(path), {}).pop(key, None) is not None and _on_record is not None:
            _on_record()
        return
    cached = read_json(path)
    if cached.pop(key, None) is not None:
        _write(path, cached)


def apply(updates: dict[str, dict[str, Any]], allowed: tuple[Path, ...] | None = None) -> None:
    """Write entries into their cache files (atomically, merged with what is there). With
    `allowed`, only files inside those folders: a forged result cannot write elsewhere."""
    for name, entries in updates.items():
        path = Path(name)
        if allowed is not None and not any(path.resolve().is_relative_to(a.resolve()) for a in allowed):
            continue
        if path.suffix != ".json":
            continue
        cached = read_json(path)
        cached.update(entries)
        _write(path, cached)


def _write(path: Path, cached: dict[str, Any]) -> None:
    """Atomically: a reader sees the old file or the new one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(cached, indent=1))
    os.replace(tmp, path)
