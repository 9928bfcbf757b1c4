"""Where the learning benchmark's results go and what they record of their making: the commit
a benchmark started at and the commits that ran each arm, the machine, the published folder
bench/results/<date>-<model>-v3-<backend>/ (an interim table beside it until the run completes).
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from actors.messages import utc_now

REPOSITORY = Path(__file__).resolve().parents[2]
ARM_COMMITS = "git_commits"  # in each arm's run folder: one line per start or resume


def git_commit() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPOSITORY, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _ram_gib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 2**20, 1)
    except OSError:
        pass
    return None


def machine() -> dict[str, Any]:
    return {"nproc": os.cpu_count(), "cpu_model": _cpu_model(), "ram_gib": _ram_gib(),
            "platform": platform.platform(), "python": platform.python_version()}


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        while chunk := stream.read(1 << 22):
            digest.update(chunk)
    return digest.hexdigest()


def note_commit(run_dir: Path, how: str) -> None:
    """One line per start or resume of an arm in its `git_commits` (commit, time, how): the table
    can then say which code ran each arm when a benchmark was resumed under other code."""
    run_dir.mkdir(parents=True, exist_ok=True)
    with (run_dir / ARM_COMMITS).open("a") as log:
        log.write(f"{git_commit() or 'unknown'} {utc_now()} {how}\n")


def started_at_commit(out: Path) -> str | None:
    """The commit the benchmark in `out` started at, recorded on its first start. Resuming with
    other code is allowed (a fix may be needed) but said aloud: its arms may not compare."""
    path = out / "git_commit"
    now = git_commit()
    if not path.is_file():
        path.write_text(f"{now or 'unknown'}\n")
        return now
    recorded = path.read_text().strip()
    if now and recorded != now:
        print(f"[learning] note: {out} was started at commit {recorded[:12]}, this is {now[:12]}: arms run by "
              "other code may not compare", file=sys.stderr)
    return None if recorded == "unknown" else recorded


def publish_folder(results: Path, name: str, out: Path) -> Path:
    """Where `out`'s table was published before as the same kind (interim or final), whatever
    its date: a benchmark running past midnight or across sessions republishes in place.
    Otherwise `results/name`, or `name-2`, `name-3`, ... when that folder holds another
    benchmark's summary (two benchmarks on one day with one model)."""
    interim = "-interim" in name
    for earlier in sorted(results.glob("*/summary.json")):
        if ("-interim" in earlier.parent.name) == interim and _published_from(earlier) == str(out):
            return earlier.parent
    for n in range(1, 1000):
        target = results / (name if n == 1 else f"{name}-{n}")
        if not (target / "summary.json").is_file():  # `out`'s own was found above
            return target
    raise SystemExit(f"bench.learning: too many published results named {name}")


def drop_interim_publication(results: Path, out: Path) -> None:
    """The final table of `out` supersedes its interim one: remove that folder, and say so."""
    for earlier in sorted(results.glob("*-interim*/summary.json")):
        if _published_from(earlier) == str(out):
            shutil.rmtree(earlier.parent)
            print(f"[learning] removed the interim table {earlier.parent} (superseded by the final one)",
                  file=sys.stderr)


def _published_from(summary: Path) -> str | None:
    """The results folder a published summary.json was made from (None when unreadable)."""
    try:
        return json.loads(summary.read_text()).get("meta", {}).get("results")
    except (OSError, ValueError, AttributeError):
        return None
