"""Replace a file whole: a reader (a live report, a resume, Grafana) sees the old text or the new,
never half of it, and a write that fails (a full disk) leaves the old file and no temporary one."""

from __future__ import annotations

import os
from pathlib import Path


def write_atomically(path: Path, text: str) -> None:
    """Write TEXT to PATH through PATH.tmp and a rename; OSError as the disk gave it."""
    partial = path.with_name(path.name + ".tmp")
    try:
        partial.write_text(text, encoding="utf-8")
        os.replace(partial, path)
    except OSError:
        partial.unlink(missing_ok=True)
        raise
