"""Where a learning benchmark's results folder stands, read from its files alone (standard library
only: cheap enough for a status line beside a running benchmark, on any machine).

    python -m bench.learning.progress runs/learning-v4-cpu [--json]

One line: the design and domain, the step it is on, and per step what is done (screening
drafts; learning-pass operators per arm; evaluation drafts of every arm against the planned ones).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

# EpisodeResult.stopped_by of operators a resume redoes (launch.campaign.finished_operators)
_REDONE = ("interrupted", "error", "infra")


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


def progress(out: Path) -> dict[str, Any]:
    """The folder's state: step, and what each step has done against its plan."""
    plan = _read(out / "plan.json")
    if plan is None:
        raise SystemExit(f"bench.learning.progress: {out} has no plan.json (not a results folder of this benchmark)")
    arms, arms_dir = plan["arms"], out / "arms"
    screening = _read(out / "screening.json")
    state: dict[str, Any] = {"results": str(out), "design": plan.get("design", "v3"), "backend": plan["backend"]}
    if screening is None:
        drafted = sum(operators_done(d) for d in sorted(arms_dir.glob("screen-d*")))
        return {**state, "step": "screening", "screening_drafts": drafted}
    heldout, curriculum = screening["heldout"], screening["curriculum"]
    learning = {arm: f"{operators_done(arms_dir / f'learn-{arm}')}/{len(curriculum)}"
                + (" done" if pass_finished(arms_dir / f"learn-{arm}") else "") for arm in arms}
    planned = len(arms) * len(heldout) * plan["eval_drafts"]
    evaluated = sum(operators_done(arms_dir / f"eval-{arm}-d{r}") for arm in arms for r in range(plan["eval_drafts"]))
    learnt = all(pass_finished(arms_dir / f"learn-{arm}") for arm in arms)
    step = "complete" if learnt and evaluated >= planned else "evaluation" if learnt else "learning"
    if screening.get("stopped"):
        step = "stopped at screening"
    return {**state, "step": step, "heldout": len(heldout), "curriculum": len(curriculum), "learning": learning,
            "evaluation_drafts": evaluated, "evaluation_planned": planned}


def line(state: dict[str, Any]) -> str:
    """The state as one human line."""
    head = f"{state['design']} {state['backend']}: {state['step']}"
    if "learning" not in state:
        return f"{head}, {state.get('screening_drafts', 0)} screening drafts of its own"
    learning = ", ".join(f"{arm} {done}" for arm, done in state["learning"].items())
    return (f"{head}; learning (operators) {learning}; evaluation {state['evaluation_drafts']}/"
            f"{state['evaluation_planned']} drafts")


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
