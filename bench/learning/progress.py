"""Where a learning benchmark's results folder stands, read from its files alone (standard library
only: cheap enough for a status line beside a running benchmark, on any machine).

    python -m bench.learning.progress runs/learning-v4-cpu [--json]

One line: the design and domain, the step it is on, and per step what is done (screening
drafts; learning-pass operators per arm; evaluation drafts of every arm against the planned ones),
then the pace of the step's latest attempts and, in the evaluation, about how long is left at it.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime
from itertools import pairwise
from pathlib import Path
from statistics import median
from typing import Any

# EpisodeResult.stopped_by of operators a resume redoes (launch.campaign.finished_operators)
_REDONE = ("interrupted", "error", "infra")
_PACE_OF = 20  # the step's latest attempts the pace is read from


def _read(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def operators_done(run_dir: Path) -> int:
    """Operators of one pass (a campaign's run folder) that a resume keeps."""
    summary = _read(run_dir / "summary.json") or {}
    return sum(1 for op in summary.get("operators", []) if op.get("stopped_by") not in _REDONE)


def pass_finished(run_dir: Path) -> bool:
    summary = _read(run_dir / "summary.json") or {}
    return bool(summary.get("finished_at")) and not summary.get("error")


def pace_s(run_dirs: list[Path]) -> float | None:
    """Median seconds between the latest attempts of these passes (their attempts.jsonl
    timestamps): a pause or a restart between two of them is one long gap, which the median
    passes over. None with fewer than three attempts."""
    stamps = []
    for run_dir in run_dirs:
        try:
            lines = (run_dir / "attempts.jsonl").read_text().splitlines()
        except OSError:
            continue
        for text in lines:
            try:
                stamps.append(datetime.fromisoformat(json.loads(text)["timestamp"]).timestamp())
            except (ValueError, KeyError, TypeError):
                continue  # a line being written
    latest = sorted(stamps)[-(_PACE_OF + 1):]
    gaps = [b - a for a, b in pairwise(latest)]
    return round(median(gaps), 1) if len(gaps) >= 2 else None


def progress(out: Path) -> dict[str, Any]:
    """The folder's state: step, and what each step has done against its plan."""
    plan = _read(out / "plan.json")
    if plan is None:
        raise SystemExit(f"bench.learning.progress: {out} has no plan.json (not a results folder of this benchmark)")
    arms, arms_dir = plan["arms"], out / "arms"
    screening = _read(out / "screening.json")
    state: dict[str, Any] = {"results": str(out), "design": plan.get("design", "v3"), "backend": plan["backend"]}
    if state["design"] == "pilot":  # no screening, no learning pass: drafts of each arm on its pool
        passes = sorted(arms_dir.glob("eval-*"))
        planned = len(arms) * len(plan["pool"]) * plan["eval_drafts"]
        evaluated = sum(operators_done(d) for d in passes)
        return {**state, "step": "complete" if evaluated >= planned else "drafting", "evaluation_drafts": evaluated,
                "evaluation_planned": planned, "pace_s": pace_s(passes) if evaluated < planned else None}
    if screening is None:
        passes = sorted(arms_dir.glob("screen-d*"))
        drafted = sum(operators_done(d) for d in passes)
        return {**state, "step": "screening", "screening_drafts": drafted, "pace_s": pace_s(passes)}
    heldout, curriculum = screening["heldout"], screening["curriculum"]
    learning = {arm: f"{operators_done(arms_dir / f'learn-{arm}')}/{len(curriculum)}"
                + (" done" if pass_finished(arms_dir / f"learn-{arm}") else "") for arm in arms}
    planned = len(arms) * len(heldout) * plan["eval_drafts"]
    evaluated = sum(operators_done(arms_dir / f"eval-{arm}-d{r}") for arm in arms for r in range(plan["eval_drafts"]))
    learnt = all(pass_finished(arms_dir / f"learn-{arm}") for arm in arms)
    step = "complete" if learnt and evaluated >= planned else "evaluation" if learnt else "learning"
    if screening.get("stopped"):
        step = "stopped at screening"
    passes = sorted(arms_dir.glob("eval-*" if step == "evaluation" else "learn-*"))
    return {**state, "step": step, "heldout": len(heldout), "curriculum": len(curriculum), "learning": learning,
            "evaluation_drafts": evaluated, "evaluation_planned": planned,
            "pace_s": pace_s(passes) if step in ("learning", "evaluation") else None}


def line(state: dict[str, Any]) -> str:
    """The state as one human line."""
    head = f"{state['design']} {state['backend']}: {state['step']}"
    pace = state.get("pace_s")
    lately = f"; lately {pace:.0f} s an attempt" if pace else ""
    if state["design"] == "pilot":
        left = state["evaluation_planned"] - state["evaluation_drafts"]
        if pace:
            lately += f", about {left * pace / 3600:.1f} h left at that pace"
        return f"{head}, {state['evaluation_drafts']}/{state['evaluation_planned']} drafts{lately}"
    if "learning" not in state:
        return f"{head}, {state.get('screening_drafts', 0)} screening drafts of its own{lately}"
    learning = ", ".join(f"{arm} {done}" for arm, done in state["learning"].items())
    left = state["evaluation_planned"] - state["evaluation_drafts"]
    if pace and state["step"] == "evaluation":
        lately += f", about {left * pace / 3600:.1f} h left at that pace"
    return (f"{head}; learning (operators) {learning}; evaluation {state['evaluation_drafts']}/"
            f"{state['evaluation_planned']} drafts{lately}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.learning.progress", description=__doc__.splitlines()[0])
    p.add_argument("out", type=Path, help="a results folder")
    p.add_argument("--json", action="store_true", help="one JSON object instead of the human line")
    args = p.parse_args(argv)
    state = progress(args.out.expanduser().resolve())
    print(json.dumps(state) if args.json else line(state))
    return 0


if __name__ == "__main__":
    sys.exit(main())
