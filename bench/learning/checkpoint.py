"""A running benchmark's state, committed as it grows, in the published runs' layout:
bench/results/<run>-in-progress/raw.tar.xz with raw.json (bench/learning/archive.py), marked
`"in_progress": true` and with no summary.json, so it is never read as a result.

    python -m bench.learning checkpoint runs/learning-v4-cpu bench/results/<date>-<model>-v4-cpu-in-progress

The folder may be in use: the benchmark keeps running. What is packed is a copy that a resume
accepts: each pass's summary.json is copied before its attempts.jsonl (so a summary never names
an operator whose attempt is missing), a partly written last line of attempts.jsonl is left out,
and the live bank of a learning pass still running is left out with the `.partial` copies (the
resume puts back the newest complete copy, banks/learn-<arm>.after-<k>, and redoes at most the
operator after it). Unpacked anywhere, `python -m bench.learning <the run's flags> --out DIR` goes
on from there (docs/learning_benchmark.md, "Resuming, also in another session on another
machine"). The final --publish removes the folder's checkpoints.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.learning.archive import MANIFEST, pack
from bench.learning.progress import pass_finished, progress

IN_PROGRESS = "in_progress"
_SKIPPED = ("writer.lock",)


def _live_banks(folder: Path) -> set[Path]:
    """Banks still being written: those of learning passes that have not finished."""
    banks = folder / "banks"
    return {bank for bank in banks.glob("learn-*") if bank.is_dir() and "." not in bank.name
            and not pass_finished(folder / "arms" / bank.name)}


def _wanted(path: Path, folder: Path, live: set[Path]) -> bool:
    relative = path.relative_to(folder)
    if path.name.endswith(".partial") or path.name in _SKIPPED or any(p.name.endswith(".partial") for p in path.parents):
        return False
    if len(relative.parts) >= 3 and relative.parts[0] == "arms" and relative.parts[2] == "report":
        return False  # derived: `evokernel report` writes it again
    return not any(path == bank or bank in path.parents for bank in live)


def snapshot(folder: Path, to: Path) -> int:
    """Copy the state of `folder` (in use or not) into the empty folder `to`; returns the files copied."""
    live = _live_banks(folder)
    files = sorted((p for p in folder.rglob("*") if p.is_file() and _wanted(p, folder, live)),
                   key=lambda p: (p.name != "summary.json", p.relative_to(folder).parts))  # summaries first
    copied = 0
    for path in files:
        target = to / path.relative_to(folder)
        target.parent.mkdir(parents=True, exist_ok=True)
        data = path.read_bytes()  # FileNotFoundError: replaced meanwhile (a bank's newer copy); tried again
        if path.name == "attempts.jsonl" and not data.endswith(b"\n"):
            data = data[: data.rfind(b"\n") + 1]  # a line being written: left out, as a resume would discard it
        target.write_bytes(data)
        copied += 1
    return copied


def checkpoint(folder: Path, result: Path, source: str | None = None, tries: int = 5) -> dict[str, Any]:
    """Pack the state of the results folder `folder` into `result` as an in-progress checkpoint."""
    if (result / "summary.json").is_file():
        raise SystemExit(f"bench.learning checkpoint: {result} holds a published table: a checkpoint goes elsewhere")
    if not (folder / "plan.json").is_file():
        raise SystemExit(f"bench.learning checkpoint: {folder} has no plan.json (not a results folder of this benchmark)")
    for attempt in range(tries):
        with tempfile.TemporaryDirectory(prefix="evokernel-checkpoint-") as work:
            try:
                snapshot(folder, Path(work))
            except FileNotFoundError:
                if attempt == tries - 1:
                    raise
                continue
            state = progress(folder)
            manifest = pack(Path(work), result, source or str(folder))
            break
    manifest |= {IN_PROGRESS: True, "progress": state,
                 "resume": "docs/learning_benchmark.md, 'Resuming, also in another session on another machine'"}
    (result / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def drop_checkpoints(results: Path, out: Path, design: str, backend: str) -> list[Path]:
    """The final table supersedes the checkpoints of the same run (a results folder of that name,
    design and domain, wherever it lay when packed): remove them."""
    dropped = []
    for manifest in sorted(results.glob(f"*/{MANIFEST}")):
        try:
            entry = json.loads(manifest.read_text())
        except ValueError:
            continue
        state = entry.get("progress") or {}
        if (entry.get(IN_PROGRESS) and Path(str(entry.get("from"))).name == out.name
                and (state.get("design"), state.get("backend")) == (design, backend)):
            shutil.rmtree(manifest.parent)
            dropped.append(manifest.parent)
            print(f"[learning] removed the checkpoint {manifest.parent} (superseded by the final table)", file=sys.stderr)
    return dropped


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.learning checkpoint", description=__doc__.splitlines()[0])
    p.add_argument("folder", type=Path, help="the benchmark's results folder (running or stopped)")
    p.add_argument("result", type=Path, help="bench/results/<run>-in-progress")
    args = p.parse_args(argv)
    from bench.learning.resume import portable

    folder = args.folder.expanduser().resolve()
    manifest = checkpoint(folder, args.result, portable(folder))
    print(json.dumps({"bench": "learning", "checkpoint": str(args.result / manifest["archive"]),
                      **{k: manifest[k] for k in ("sha256", "bytes", "files", "from", "progress")}}))
    return 0
