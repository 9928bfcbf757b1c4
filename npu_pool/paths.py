"""Where the harness keeps its caches (all under ~/.cache/evokernel unless configured)."""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "evokernel"


def build_cache_dir(configured: str | None = None) -> Path:
    path = Path(configured).expanduser() if configured else cache_root() / "build"
    path.mkdir(parents=True, exist_ok=True)
    return path
