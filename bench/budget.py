"""The time-budget benchmark (issue 67, point 4): one slice of the bundled suite, the same seeds,
three runs of the main job, one after another:

- `full`: the default run before issue 67, 30 iterations per operator, no stop rules
  (`episode.plateau_refinements=0`, `episode.uncompiled_drafts=0`), no budget;
- `budget`: `--hours` a third of `full`'s measured wall time, the stop rules at their defaults;
- `stops`: the stop rules at their defaults alone, no budget.

    python -m bench.budget run [--out runs/budget-bench] [--stop-before ROW]
                                                                run or continue whatever is not finished
    python -m bench.budget status [--out ...]                   one line per row
    python -m bench.budget checkpoint OUT RESULT                pack OUT (paused) as RESULT-in-progress
    python -m bench.budget publish OUT RESULT                   the table, once the three rows are finished

Each row is `evokernel run` (Ray, the local model, a fresh memory bank of its own under the row's
folder) over the same 24 operators: every fourth task of suites/cpu in the suite's order, from
the first (`SLICE`). A row that stops (SIGTERM: `bench/budget_ctl.sh pause`, a session's end, a
crash) continues with `evokernel run --resume` on the next `run`; a resumed row's operator that was
cut short runs again from its first attempt (as any resume does). The wall time of a row is what
its sessions took, less what a resume threw away (the wall time of the attempts it set aside) and
less the start-up of every session after the first (Ray, the model server, the bank: from the
session's start to its first attempt's start), so a row stopped and resumed counts what one
uninterrupted run would have taken; each session's own figures are kept in `segments.json`.

The budget row's hours are fixed when it starts, from `full`'s wall time: it cannot start before
`full` has finished. Its run's own clock (`--hours`, the run's total over its sessions) charges the
attempts a resume sets aside, which `full`'s wall time leaves out; so a resume of the budget row is
given their time back (`budget_hours_now`). Prints one JSON line (`publish`): the headline `{"bench": "budget",
"<row>_feasible", "<row>_fast_1", "<row>_wall_s", "<row>_median_speedup" ...}` for each row.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.budget_probe import sessions, speed_adjusted_share
from bench.budget_table import markdown

REPOSITORY = Path(__file__).resolve().parents[1]
SUITE = REPOSITORY / "suites" / "cpu"
ROWS = ("full", "budget", "stops")
SEED = 0
ITERATIONS = 30
BUDGET_SHARE = 1 / 3
ROW_FLAGS = {
    "full": ["--set", "episode.plateau_refinements=0", "--set", "episode.uncompiled_drafts=0"],
    "budget": [],  # + --hours, from full's wall time
    "stops": [],
}
MAX_TRIES = 10  # sessions of one row that end with exit 1 (a lost endpoint) before the benchmark gives up
MODEL = "qwen2.5-coder-1.5b-instruct"


def slice_tasks() -> list[str]:
    """Every fourth task of the bundled CPU suite in its order, from the first: 24 operators."""
    from launch.campaign import select_tasks

    return [p.stem for p in select_tasks(SUITE)[::4]][:24]


# -- the plan and the rows' state ---------------------------------------------------------------

def load_json(path: Path, default: Any = None) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return default


def write_json(path: Path, data: Any) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def plan_of(out: Path) -> dict[str, Any]:
    plan = load_json(out / "plan.json")
    if plan is None:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPOSITORY, capture_output=True, text=True).stdout.strip()
        plan = {"bench": "budget", "suite": "suites/cpu", "slice": slice_tasks(), "slice_rule": "every fourth task of "
                "suites/cpu in its natural order, from the first", "iterations": ITERATIONS, "seed": SEED,
                "rows": list(ROWS), "row_flags": ROW_FLAGS, "budget_share": BUDGET_SHARE, "commit": commit,
                "created": datetime.now(UTC).isoformat(timespec="seconds"), "budget_hours": None}
        out.mkdir(parents=True, exist_ok=True)
        write_json(out / "plan.json", plan)
    return plan


def summary_of(row_dir: Path) -> dict[str, Any] | None:
    return load_json(row_dir / "summary.json")


UNJUDGED = ("infra", "error", "interrupted", "suspended")  # stopped_by that a resume runs again (or continues)


def finished(row_dir: Path) -> bool:
    """The row's run ended by itself: every operator to its end, or (budget) the budget spent. An
    operator stopped by infrastructure (lost with its worker twice, the endpoint's faults) is not a
    figure of the row: the next session (`--resume`) runs it again."""
    summary = summary_of(row_dir)
    if not summary or summary.get("interrupted") or summary.get("error") or not summary.get("finished_at"):
        return False
    if any(op.get("stopped_by") in UNJUDGED for op in summary["operators"]):
        return False
    listed = {op["task"] for op in summary["operators"]}
    if summary.get("budget"):
        return True  # the run ends only when its budget is spent or every operator ended
    return all(task in listed for task in summary["planned"])


def attempts_of(path: Path) -> list[dict[str, Any]]:
    rows = []
    if path.is_file():
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                rows.append(json.loads(line))
            except ValueError:
                continue
    return rows


def _epoch(stamp: str) -> float:
    return datetime.fromisoformat(stamp).timestamp()


def wall_s(out: Path, row: str) -> dict[str, Any]:
    """The row's wall time (module docstring) and its parts."""
    row_dir = out / row
    segments = load_json(out / "segments.json", {}).get(row, [])
    attempts = attempts_of(row_dir / "attempts.jsonl") + attempts_of(row_dir / "attempts.discarded.jsonl")
    total = sum(s["end"] - s["start"] for s in segments if s.get("end"))
    startups = []
    for s in segments:
        if not s.get("end"):
            continue
        starts = [_epoch(a["timestamp"]) - a.get("wall_s", 0.0) for a in attempts
                  if a.get("timestamp") and s["start"] <= _epoch(a["timestamp"]) <= s["end"]]
        startups.append(min(starts) - s["start"] if starts else s["end"] - s["start"])
    discarded = sum(a.get("wall_s", 0.0) for a in attempts_of(row_dir / "attempts.discarded.jsonl"))
    later_startups = sum(startups[1:])
    return {"wall_s": round(total - discarded - later_startups, 1), "sessions": len(segments),
            "sessions_wall_s": round(total, 1), "discarded_attempts_wall_s": round(discarded, 1),
            "later_startups_s": round(later_startups, 1), "first_startup_s": round(startups[0], 1) if startups else None}


def redone_attempts_s(row_dir: Path) -> float:
    """The wall time of the row's attempts that resumes set aside, or that the next resume will (those
    of operators its summary lists as not to be kept: launch.campaign.finished_operators)."""
    from actors.messages import EpisodeResult
    from launch.campaign import finished_operators

    listed = [EpisodeResult.model_validate(op) for op in (summary_of(row_dir) or {}).get("operators", [])]
    dropped = {op.task for op in listed} - {op.task for op in finished_operators(listed)}
    to_drop = [a for a in attempts_of(row_dir / "attempts.jsonl") if a.get("task") in dropped]
    return sum(a.get("wall_s", 0.0) for a in attempts_of(row_dir / "attempts.discarded.jsonl") + to_drop)


def budget_hours_now(row_dir: Path, plan: dict[str, Any]) -> float:
    """`--hours` for a resume of the budget row: its budget plus the attempts resumes redo. The run's own
    clock charges a set-aside attempt's time; `full`'s wall time (`wall_s`) does not count it, so
    neither does the budget row's (the rule, fixed on 2026-12-08 before the row started)."""
    return plan["budget_hours"] + redone_attempts_s(row_dir) / 3600


# -- running ------------------------------------------------------------------------------------

def row_command(out: Path, row: str, plan: dict[str, Any]) -> list[str]:
    # `python -m launch.cli` with this checkout first on the path (PYTHONPATH, which Ray's workers inherit): the
    # .venv's `evokernel` script would import the checkout the .venv was installed from (an editable install)
    evokernel = [str(REPOSITORY / ".venv" / "bin" / "python"), "-m", "launch.cli"]
    row_dir = out / row
    if summary_of(row_dir) is not None:
        extra = ["--hours", f"{budget_hours_now(row_dir, plan):.4f}"] if row == "budget" else []
        return [*evokernel, "run", "--resume", str(row_dir), *extra]
    flags = list(ROW_FLAGS[row]) + (["--hours", f"{plan['budget_hours']:.4f}"] if row == "budget" else [])
    return [*evokernel, "--set", f"local_llm.seed={plan['seed']}", "--set", f"memory.seed={plan['seed']}", *flags,
            "run", "--suite", str(SUITE), "--tasks", ",".join(f"{t}.py" for t in plan["slice"]),
            "--iterations", str(plan["iterations"]), "--out", str(row_dir), "--memory", str(row_dir / "bank")]


def run_row(out: Path, row: str, plan: dict[str, Any], stop: dict[str, bool]) -> int:
    """One session of the row; its exit status."""
    segments = load_json(out / "segments.json", {})
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPOSITORY, capture_output=True, text=True).stdout.strip()
    record: dict[str, Any] = {"start": time.time(), "end": None, "exit": None, "commit": commit,
                              "load1": [os.getloadavg()[0]]}
    segments.setdefault(row, []).append(record)
    write_json(out / "segments.json", segments)
    command = row_command(out, row, plan)
    with (out / f"{row}.log").open("a", encoding="utf-8") as log:
        log.write(f"\n# {datetime.now(UTC).isoformat(timespec='seconds')}: {' '.join(command)}\n")
        log.flush()
        child = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=REPOSITORY, start_new_session=True,
                                 env={**os.environ, "PYTHONPATH": str(REPOSITORY)})
        last = time.time()
        while child.poll() is None:
            time.sleep(2)
            if stop.get("now"):
                child.send_signal(signal.SIGTERM)
                stop["now"] = False
            if time.time() - last >= 300:  # the machine's load as the row ran
                record["load1"].append(os.getloadavg()[0])
                last = time.time()
                write_json(out / "segments.json", segments)
    record["end"], record["exit"] = time.time(), child.returncode
    write_json(out / "segments.json", segments)
    return child.returncode


def run(out: Path, stop_before: str | None = None) -> int:
    """Run or continue the rows not finished, in order; with STOP_BEFORE, end (0) before that row
    starts, so a row whose time is measured starts in a session long enough to hold it."""
    plan = plan_of(out)
    stop = {"now": False}

    def on_term(signum: int, frame: Any) -> None:
        stop["now"] = True
        stop["stopping"] = True

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    for row in plan["rows"]:
        tries = 0
        if row == stop_before and not finished(out / row) and summary_of(out / row) is None:
            print(f"bench.budget: stopped before the {row} row (--stop-before); resume without it to go on",
                  file=sys.stderr, flush=True)
            return 0
        while not finished(out / row):
            if stop.get("stopping"):
                return 130
            if row == "budget" and plan["budget_hours"] is None:
                if not finished(out / "full"):
                    print("bench.budget: the budget row waits for the full row", file=sys.stderr)
                    return 1
                plan["budget_hours"] = round(wall_s(out, "full")["wall_s"] * plan["budget_share"] / 3600, 4)
                write_json(out / "plan.json", plan)
            code = run_row(out, row, plan, stop)
            print(f"bench.budget: {row} session ended with exit {code}", file=sys.stderr, flush=True)
            if code == 130 or stop.get("stopping"):
                return 130
            if not finished(out / row):
                tries += 1
                if tries >= MAX_TRIES:
                    print(f"bench.budget: {row} did not finish in {MAX_TRIES} sessions", file=sys.stderr)
                    return 1
                time.sleep(30)
    print(json.dumps(table(out)))
    return 0


# -- the figures ----------------------------------------------------------------------------------

def figures(out: Path, row: str) -> dict[str, Any]:
    summary = summary_of(out / row) or {}
    ops = summary.get("operators", [])
    feasible = [op for op in ops if op.get("feasible")]
    fast = [op for op in feasible if (op.get("speedup_vs_eager") or 0) > 1]
    speedups = [op["speedup_vs_eager"] for op in feasible if op.get("speedup_vs_eager")]
    attempts = attempts_of(out / row / "attempts.jsonl")
    stopped = {}
    for op in ops:
        stopped[op.get("stopped_by", "?")] = stopped.get(op.get("stopped_by", "?"), 0) + 1
    return {"finished": finished(out / row), "operators": len(summary.get("planned", [])), "ended": len(ops),
            "feasible": len(feasible), "fast_1": len(fast),
            "median_speedup": round(statistics.median(speedups), 3) if speedups else None,
            "attempts": len(attempts), "attempt_median_s": round(statistics.median(a["wall_s"] for a in attempts), 1)
            if attempts else None, "stopped_by": stopped, "budget": summary.get("budget"), **wall_s(out, row)}


def per_operator(out: Path, rows: list[str]) -> dict[str, dict[str, Any]]:
    """task -> row -> what the row did with it (feasible, best speedup, attempts kept, how it stopped);
    a task a row never ended is absent from that row."""
    table: dict[str, dict[str, Any]] = {}
    for row in rows:
        summary = summary_of(out / row) or {}
        counts: dict[str, int] = {}
        for a in attempts_of(out / row / "attempts.jsonl"):
            counts[a.get("task", "?")] = counts.get(a.get("task", "?"), 0) + 1
        for task in summary.get("planned", []):
            table.setdefault(task, {})
        for op in summary.get("operators", []):
            table.setdefault(op["task"], {})[row] = {
                "feasible": bool(op.get("feasible")), "speedup": op.get("speedup_vs_eager") if op.get("feasible") else None,
                "attempts": counts.get(op["task"], 0), "stopped_by": op.get("stopped_by")}
    return table


def table(out: Path) -> dict[str, Any]:
    plan = plan_of(out)
    rows = {row: figures(out, row) for row in plan["rows"]}
    headline: dict[str, Any] = {"bench": "budget"}
    for row, f in rows.items():
        for key in ("feasible", "fast_1", "wall_s", "median_speedup", "attempts"):
            headline[f"{row}_{key}"] = f[key]
    by_row = {row: sessions(out, row) for row in plan["rows"]}
    full, budget = rows["full"], rows["budget"]
    if full["finished"] and budget["finished"]:
        headline["budget_hours"] = plan["budget_hours"]
        headline["target_met"] = (budget["feasible"] >= 0.95 * full["feasible"]
                                  and budget["fast_1"] >= 0.95 * full["fast_1"])
        adjusted = speed_adjusted_share(by_row, plan["budget_hours"], full["wall_s"])
        headline["budget_share_speed_adjusted"] = adjusted["share"] if adjusted else None
    return {"headline": headline, "rows": rows, "plan": plan, "operators": per_operator(out, plan["rows"]),
            "sessions": by_row,
            "complete": all(f["finished"] for f in rows.values())}


def status(out: Path) -> None:
    plan = plan_of(out)
    for row in plan["rows"]:
        f = figures(out, row)
        print(f"{row}: {'finished' if f['finished'] else 'not finished'}; {f['ended']}/{f['operators'] or len(plan['slice'])} operators ended, "
              f"{f['attempts']} attempts (median {f['attempt_median_s']} s), {f['feasible']} feasible, {f['fast_1']} "
              f"fast_1, wall {f['wall_s']:.0f} s over {f['sessions']} session(s)")


def checkpoint(out: Path, result: Path) -> None:
    """Pack OUT (not running: pause it first) as RESULT-in-progress (raw.tar.xz, raw.json), marked."""
    from bench.learning.archive import pack

    target = result if result.name.endswith("-in-progress") else result.with_name(result.name + "-in-progress")
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / out.name
        shutil.copytree(out, copy, ignore=shutil.ignore_patterns("report", "run.lock", "*.tmp"))
        if target.exists():
            shutil.rmtree(target)
        target.mkdir(parents=True)
        manifest = pack(copy, target, source=str(out))
    raw = target / "raw.json"
    data = load_json(raw, {})
    now = table(out)
    data.update({"in_progress": True, "where": now["headline"], "packed": manifest.get("files") if
                 isinstance(manifest, dict) else None})
    write_json(raw, data)
    (target / "summary.md").write_text(markdown(now), encoding="utf-8")  # where it stands, readable
    print(f"bench.budget: checkpoint {target}")


def publish(out: Path, result: Path) -> None:
    t = table(out)
    if not t["complete"]:
        raise SystemExit("bench.budget: not every row has finished: checkpoint it instead")
    from bench.learning.archive import pack

    result.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / out.name
        shutil.copytree(out, copy, ignore=shutil.ignore_patterns("report", "run.lock", "*.tmp"))
        pack(copy, result, source=str(out))
    write_json(result / "summary.json", t)
    (result / "summary.md").write_text(markdown(t), encoding="utf-8")
    print(json.dumps(t["headline"]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.budget", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("run", "status"):
        p = sub.add_parser(name)
        p.add_argument("--out", type=Path, default=Path("runs/budget-bench"))
        if name == "run":
            p.add_argument("--stop-before", choices=ROWS, help="end before this row starts (one not started yet)")
    for name in ("checkpoint", "publish"):
        p = sub.add_parser(name)
        p.add_argument("out", type=Path)
        p.add_argument("result", type=Path)
    args = parser.parse_args(argv)
    out = args.out.resolve()
    if args.command == "run":
        return run(out, args.stop_before)
    if args.command == "status":
        status(out)
    elif args.command == "checkpoint":
        checkpoint(out, args.result)
    else:
        publish(out, args.result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
