"""Where a learning benchmark's results folder stands, read from its files alone (standard library
only: cheap enough for a status line beside a running benchmark, on any machine).

    python -m bench.learning.progress runs/learning-v4-cpu [--json]

One line: the design and domain, the step it is on, and per step what is done (screening
drafts; learning-pass operators per arm; evaluation drafts of every arm against the planned ones),
then the pace of the step's latest attempts and about how long is left at it: in the evaluation its
drafts left (one attempt each); in the learning step also the passes' operators left, at the mean
attempts an operator of theirs has taken so far.
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


def attempts_in(run_dir: Path) -> int:
    """Attempts a pass has recorded (complete lines of its attempts.jsonl)."""
    try:
        return (run_dir / "attempts.jsonl").read_text().count("\n")
    except OSError:
        return 0


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
            "pace_s": pace_s(passes) if step in ("learning", "evaluation") else None,
            "attempts_left": _attempts_left(step, [arms_dir / f"learn-{arm}" for arm in arms], len(curriculum),
                                            planned - evaluated)}


def _attempts_left(step: str, learning: list[Path], curriculum: int, drafts_left: int) -> int | None:
    """About how many attempts the run has left: its evaluation drafts (one attempt each) and, in the
    learning step, the passes' operators left at the mean attempts an operator has taken so far
    (None before any learning operator is done: there is no mean yet)."""
    if step == "evaluation":
        return drafts_left
    if step != "learning":
        return None
    done = sum(operators_done(d) for d in learning)
    if not done:
        return None
    operators_left = sum(max(curriculum - operators_done(d), 0) for d in learning)
    return round(operators_left * sum(attempts_in(d) for d in learning) / done) + drafts_left


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
    left = state.get("attempts_left")
    if state["step"] == "evaluation" and left is None:  # a state recorded before attempts_left existed
        left = state["evaluation_planned"] - state["evaluation_drafts"]
    if pace and left is not None:
        lately += f", about {left * pace / 3600:.1f} h left at that pace"
        if state["step"] == "learning":
            lately += f" ({left} attempts, the evaluation's included)"
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
