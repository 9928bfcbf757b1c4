"""Where the harness keeps its caches (all under ~/.cache/evokernel unless configured), and where
its child processes import it from."""

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


# The folder that holds this npu_pool package (a checkout, or site-packages).
PACKAGE_PARENT = Path(__file__).resolve().parents[1]


def child_pythonpath(inherited: str | None = None) -> str:
    """PYTHONPATH for a child started as `python -m npu_pool...`: this package's folder first, so
    the child runs this very harness, never another copy that an editable install elsewhere points
    at (a benchmark clone sharing main's venv ran main's worker until 2026-12-07)."""
    return os.pathsep.join([str(PACKAGE_PARENT), *([inherited] if inherited else [])])
