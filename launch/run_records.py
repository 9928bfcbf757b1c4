"""Read a run folder's records as far as they go: summary.json as a launch.run_summary.RunSummary
and attempts.jsonl as actors.messages.Attempt lines (docs/contracts.md).

What a killed or unfinished campaign leaves (no summary, an unreadable one, a half-written last
line) is stated in `problems` and read past; a line in the middle of attempts.jsonl that is not an
Attempt is corruption, not a crash: `CorruptRunFolder` names the file and the line.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import ValidationError

from actors.messages import Attempt
from launch.run_summary import RunSummary, RunSummaryError


class CorruptRunFolder(Exception):
    """A line of attempts.jsonl, other than a half-written last one, is not an Attempt."""


def read_summary(run_dir: Path, problems: list[str]) -> RunSummary | None:
    """summary.json as a RunSummary; None (and a problem stated) where there is none to use."""
    if not (run_dir / "summary.json").is_file():
        problems.append("no summary.json (the campaign did not finish?): figures come from attempts.jsonl alone")
        return None
    try:
        return RunSummary.load(run_dir)
    except RunSummaryError as exc:
        problems.append(f"{exc}: ignored")
        return None


def read_attempts(run_dir: Path, problems: list[str]) -> list[Attempt]:
    """Every line of attempts.jsonl as an Attempt. A half-written last line (a killed campaign,
    or one still writing) is skipped and stated; any other bad line raises CorruptRunFolder."""
    path = run_dir / "attempts.jsonl"
    if not path.is_file():
        problems.append("no attempts.jsonl: no attempt was recorded")
        return []
    lines = path.read_text(errors="replace").splitlines()
    attempts: list[Attempt] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            json.loads(line)
        except json.JSONDecodeError as exc:
            if number == len(lines):
                problems.append(f"attempts.jsonl line {number}: half-written last line (campaign killed?): ignored")
                continue
            raise CorruptRunFolder(f"{path} line {number}: not JSON ({exc})") from None
        try:
            attempts.append(Attempt.model_validate_json(line))
        except ValidationError as exc:
            wrong = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'the line'}: {e['msg']}" for e in exc.errors()[:3])
            raise CorruptRunFolder(f"{path} line {number}: not an Attempt ({wrong})") from None
    return attempts
