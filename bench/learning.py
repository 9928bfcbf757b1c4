"""Learning benchmark: does the memory help a model on operators it mostly fails cold?

Operators come in families, in curriculum order (each family's member the cold model solves
first, then members it fails), chosen by a first pass (retrieval `none`) unless --tasks names
them. Arms, each a single-process campaign (launch.campaign.Campaign) with the same operators,
iterations, model and seed bank (the backend's bundle), each from a fresh copy of it:

- `none`, `similarity`, `value`: the retrieval modes;
- `value+provenance`: value mode with the memory's provenance credit (credit flows back along
  the chain of start points);
- `transfer`: the level-2 operators alone, value mode, from the seeded bank: what the value
  arm's level-2 operators (run after the level-1 curriculum) would have done without it.

Every arm runs in `--replicates` replicates (memory.seed = --seed + replicate; later
replicates shuffle the order of the families and of their hard members). The results folder
holds the state: run the same command again after a kill, or on another machine from a
committed copy of it, and finished arms are skipped. Run by hand, never in CI. Prints one
JSON line at the end.

    python -m bench.learning --dry-run                 # the plan and its estimated duration
    python -m bench.learning --out runs/learning       # local model, default size
    python -m bench.learning --quick --out runs/quick  # smoke: 3 operators x 2 iterations, 1 replicate
    python -m bench.learning --full --llm-base-url URL --llm-model M
    python -m bench.learning --v3 --dry-run --backend cpu   # v3 (issue 27): bench/learning_v3.py
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPOSITORY = Path(__file__).resolve().parents[1]
if str(REPOSITORY) not in sys.path:
    sys.path.insert(0, str(REPOSITORY))

from bench.learning_arms import (  # noqa: E402
    ARMS,
    TRANSFER,
    TRANSFER_MEMORY,
    LearningBenchmark,
    check_arms_supported,
    run_name,
)
from bench.learning_selection import (  # noqa: E402
    choose,
    curriculum,
    family,
    level_of,
    pool_globs,
    rates_from,
    replicate_order,
    resolve,
)
from bench.learning_session import build_settings, model_meta, portable, run_resumable  # noqa: E402
from bench.learning_summary import (  # noqa: E402
    drop_interim_publication,
    git_commit,
    machine,
    publish_folder,
    started_at_commit,
    summarise,
)
from launch.campaign import CampaignError, default_suite  # noqa: E402

ALL_ARMS = (*ARMS, TRANSFER)
# Per replicate: 4 arms x 6 x 6 + 2 level-2 operators x 6 (transfer) = 156 attempts; the
# selection pass (35 pool operators x 1 attempt) runs once for all replicates. An attempt of
# the local 1.5B model costs about 130 s on the 2-core machine (the v2 run, 2026-11-23: prompts
# of 1,600-4,700 tokens, 340-620 generated, one llama.cpp thread): 5.6 h a replicate.
SECONDS_PER_ATTEMPT = 130.0
DEFAULT = {"operators": 6, "iterations": 6, "replicates": 2}
FULL = {"operators": 16, "iterations": 30, "replicates": 3}
# 4 arms x 3 x 2 + 1 x 2 = 26 attempts, about 56 min at 130 s an attempt; no selection pass.
QUICK = {"tasks": "4_ReLU,5_GELU,level2/1_GemmBiasReLU", "iterations": 2, "replicates": 1}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.learning", description=__doc__.splitlines()[0])
    p.add_argument("--out", default=None, help="results folder (default runs/learning-<time>); rerun to resume")
    p.add_argument("--suite", default=None, help="task folder (default: bundled suites/cpu)")
    p.add_argument("--tasks", default=None, help="comma-separated task globs, grouped by family: no selection pass")
    p.add_argument("--pool", default=None, help="comma-separated globs for the selection pass (default: the families)")
    p.add_argument("--operators", type=int, default=None, help=f"operators kept (default {DEFAULT['operators']})")
    p.add_argument("--iterations", type=int, default=None, help=f"attempts per operator (default {DEFAULT['iterations']})")
    p.add_argument("--replicates", type=int, default=None,
                   help=f"replicates of every arm (default {DEFAULT['replicates']}); a rerun may raise it")
    p.add_argument("--select-iterations", type=int, default=1, help="attempts per pool operator in the selection pass")
    size = p.add_mutually_exclusive_group()
    size.add_argument("--full", action="store_true", help=f"paper size: {FULL['operators']} operators x "
                      f"{FULL['iterations']} iterations, {FULL['replicates']} replicates")
    size.add_argument("--quick", action="store_true", help=f"smoke size: {QUICK['tasks']}, {QUICK['iterations']} "
                      "iterations, 1 replicate (about 1 h with the local model)")
    p.add_argument("--arms", default=",".join(ALL_ARMS), help="comma-separated subset of the arms")
    p.add_argument("--seed", type=int, default=0, help="memory.seed of replicate 0 (replicate r: seed + r)")
    p.add_argument("--llm-base-url", default=None, help="OpenAI-compatible endpoint (default: serve the local model)")
    p.add_argument("--llm-model", default=None, help="model name at that endpoint")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="any other setting")
    p.add_argument("--seconds-per-attempt", type=float, default=SECONDS_PER_ATTEMPT,
                   help=f"for the duration estimate (default {SECONDS_PER_ATTEMPT:.0f}: the local model here)")
    p.add_argument("--dry-run", action="store_true", help="print the plan and its estimated duration, run nothing")
    p.add_argument("--publish", action="store_true", help="copy summary.md/.json into bench/results/<date>-<model>/")
    p.add_argument("--summary-so-far", action="store_true",
                   help="run nothing: summarise the runs finished so far in --out (an interim table; with "
                   "--publish, into bench/results/<date>-<model>-interim/)")
    return p.parse_args(argv)


def _plan(args: argparse.Namespace) -> dict[str, Any]:
    size = FULL if args.full else QUICK if args.quick else DEFAULT
    tasks_arg = args.tasks or (QUICK["tasks"] if args.quick else None)
    iterations = args.iterations or size["iterations"]
    replicates = args.replicates or size["replicates"]
    suite = Path(args.suite).expanduser().resolve() if args.suite else default_suite()
    arms = [a.strip() for a in args.arms.split(",") if a.strip()]
    unknown = set(arms) - set(ALL_ARMS)
    if unknown:
        raise SystemExit(f"bench.learning: unknown arm(s) {', '.join(sorted(unknown))}; arms: {', '.join(ALL_ARMS)}")
    if replicates < 1 or iterations < 1:
        raise SystemExit("bench.learning: --replicates and --iterations must be at least 1")
    pool: list[Path] = []
    tasks: list[Path] = []
    if tasks_arg:
        tasks = curriculum(resolve(suite, [g.strip() for g in tasks_arg.split(",") if g.strip()]))
        if not tasks:
            raise SystemExit(f"bench.learning: no task in {suite} matches {tasks_arg!r}")
    else:
        pool = resolve(suite, [g.strip() for g in args.pool.split(",")] if args.pool else pool_globs())
        if not pool:
            raise SystemExit(f"bench.learning: the selection pool is empty in {suite}")
    operators = len(tasks) if tasks else min(args.operators or size.get("operators", 6), len(pool))
    return {"suite": suite, "operators": operators, "iterations": iterations, "replicates": replicates,
            "arms": arms, "tasks": tasks, "pool": pool}


def estimate(plan: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    """Attempts by arithmetic: every operator of an arm runs all its iterations (refining after
    its first feasible kernel), so the count does not depend on what the model does."""
    n, t = plan["operators"], plan["iterations"]
    level2 = (sum(level_of(p) == 2 for p in plan["tasks"]) if plan["tasks"]
              else min(max(1, n // 3), sum(level_of(p) == 2 for p in plan["pool"])))
    per_replicate = sum(arm in ARMS for arm in plan["arms"]) * n * t + (level2 * t if TRANSFER in plan["arms"] else 0)
    select = len(plan["pool"]) * args.select_iterations
    attempts = plan["replicates"] * per_replicate + select
    return {"attempts": attempts, "attempts_per_replicate": per_replicate, "selection_attempts": select,
            "seconds_per_attempt": args.seconds_per_attempt,
            "estimated_s": round(attempts * args.seconds_per_attempt),
            "estimated_s_per_replicate": round(per_replicate * args.seconds_per_attempt)}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "--v3" in argv:  # the v3 design: screening, learning, frozen-bank evaluation (bench/learning_v3.py)
        from bench.learning_v3 import main as main_v3

        return main_v3([a for a in argv if a != "--v3"])
    args = parse_args(argv)
    plan = _plan(args)
    guess = estimate(plan, args)
    count = len(plan["tasks"]) or f"{plan['operators']} selected from {len(plan['pool'])}"
    print(f"[learning] plan: arms {', '.join(plan['arms'])}; {count} operators x {plan['iterations']} iterations "
          f"x {plan['replicates']} replicate(s); {guess['attempts_per_replicate']} attempts per replicate "
          f"(about {guess['estimated_s_per_replicate'] / 60:.0f} min), selection pass {guess['selection_attempts']}; "
          f"{guess['attempts']} attempts in all, about {guess['estimated_s'] / 3600:.1f} h at "
          f"{args.seconds_per_attempt:.0f} s per attempt (the local 1.5B model on 2 cores: about "
          f"{SECONDS_PER_ATTEMPT:.0f} s)",
          file=sys.stderr)
    if args.dry_run:
        print(json.dumps({"bench": "learning", "dry_run": True, **guess,
                          "operators": [p.stem for p in plan["tasks"]] or None, "pool": [p.stem for p in plan["pool"]],
                          "iterations": plan["iterations"], "replicates": plan["replicates"], "arms": plan["arms"]}))
        return 0
    check_arms_supported(plan["arms"])
    from launch.logging import configure_logging

    settings = build_settings(args)
    configure_logging(settings.log_json, settings.log_level)  # one line per attempt: progress
    if args.summary_so_far:
        if not args.out or not (Path(args.out) / "plan.json").is_file():
            raise SystemExit("bench.learning: --summary-so-far needs --out naming a benchmark's results folder")
        out = Path(args.out).expanduser().resolve()
        _check_same_plan(out, plan, args)
        print(json.dumps(_summary_so_far(args, plan, settings, out)))
        return 0
    out = Path(args.out or f"runs/learning-{datetime.now(UTC):%Y%m%d-%H%M%S}").expanduser().resolve()
    out.mkdir(parents=True, exist_ok=True)
    _check_same_plan(out, plan, args)
    return run_resumable("learning", out, settings, lambda settings, model: _run(args, plan, settings, model, out),
                         (CampaignError,))


def _check_same_plan(out: Path, plan: dict[str, Any], args: argparse.Namespace) -> None:
    """A results folder resumes only the benchmark that started it; more replicates may be asked for."""
    recorded = {"tasks": [p.stem for p in plan["tasks"]], "pool": [p.stem for p in plan["pool"]],
                "operators": plan["operators"], "iterations": plan["iterations"], "arms": plan["arms"],
                "seed": args.seed, "select_iterations": args.select_iterations, "suite": portable(plan["suite"])}
    path = out / "plan.json"
    if path.is_file():
        earlier = json.loads(path.read_text())
        replicates = earlier.pop("replicates", plan["replicates"])
        if earlier != recorded:
            raise SystemExit(f"bench.learning: {out} holds a benchmark with another plan ({path}); "
                             "pick a new --out or repeat that benchmark's flags")
        plan["replicates"] = max(plan["replicates"], replicates)
    path.write_text(json.dumps({**recorded, "replicates": plan["replicates"]}, indent=2) + "\n")


def _select(bench: LearningBenchmark, plan: dict[str, Any], args: argparse.Namespace) -> tuple[list[Path], list[str]]:
    """The first pass (retrieval none, --select-iterations attempts per pool operator), once."""
    from launch.report import analyse_run

    cached = bench.out / "selection.json"
    by_stem = {p.stem: p for p in plan["pool"]}
    if cached.is_file():
        data = json.loads(cached.read_text())
        return [by_stem[name] for name in data["selected"]], data["easy"]
    bench.run_arm("selection", ARMS["none"], plan["pool"], args.select_iterations, args.seed)
    report = analyse_run(bench.arm_dir("selection"))
    rates = rates_from({row.task: row for row in report.operators})
    chosen, easy = choose(plan["pool"], rates, plan["operators"])
    if not easy:
        print("[learning] the cold model solved no pool operator: no family has an easy member to start its "
              "curriculum", file=sys.stderr)
    cached.write_text(json.dumps({
        "selected": [p.stem for p in chosen], "easy": easy, "families": {p.stem: family(p) for p in chosen},
        "iterations": args.select_iterations, "rates": rates,
    }, indent=2) + "\n")
    return chosen, easy


def _planned_runs(plan: dict[str, Any], tasks: list[Path], seed: int) -> list[tuple[int, str, list[Path]]]:
    """(replicate, arm, operators in order) for every run of the benchmark."""
    runs = []
    has_levels = any(level_of(p) == 1 for p in tasks) and any(level_of(p) == 2 for p in tasks)
    for replicate in range(plan["replicates"]):
        order = replicate_order(tasks, replicate, seed)
        runs += [(replicate, arm, order) for arm in ARMS if arm in plan["arms"]]
        if TRANSFER in plan["arms"] and has_levels:
            runs.append((replicate, TRANSFER, [p for p in order if level_of(p) == 2]))
    return runs


def _run(args: argparse.Namespace, plan: dict[str, Any], settings, model: dict[str, Any], out: Path) -> dict[str, Any]:
    bench = LearningBenchmark(settings, out)
    commit = started_at_commit(out)
    tasks, easy = (plan["tasks"], []) if plan["tasks"] else _select(bench, plan, args)
    print("[learning] operators: " + ", ".join(f"{p.stem} [{family(p)}]" for p in tasks), file=sys.stderr)
    if TRANSFER in plan["arms"] and not (any(level_of(p) == 1 for p in tasks) and any(level_of(p) == 2 for p in tasks)):
        print("[learning] transfer: skipped (needs level-1 and level-2 operators)", file=sys.stderr)
    runs = _planned_runs(plan, tasks, args.seed)
    names = [run_name(r, arm) for r, arm, _ in runs]
    bench.write_state(names)
    for replicate, arm, order in runs:
        memory = TRANSFER_MEMORY if arm == TRANSFER else ARMS[arm]
        bench.run_arm(run_name(replicate, arm), memory, order, plan["iterations"], args.seed + replicate)
        bench.write_state(names)
    line = _summary(args, plan, bench, tasks, easy, settings, model, commit, interim=False)
    print(f"[learning] results: {out} (summary.md, summary.json, report/report.html)", file=sys.stderr)
    spent = [json.loads((run / "summary.json").read_text())["totals"] for run in sorted(bench.arms_dir.iterdir())
             if (run / "summary.json").is_file()]  # the selection pass included
    return {**line, "results": str(out), "attempts": sum(t["attempts"] for t in spent),
            "tokens": sum(t["tokens"] for t in spent)}


def _summary_so_far(args: argparse.Namespace, plan: dict[str, Any], settings, out: Path) -> dict[str, Any]:
    """The interim table: what the finished runs show, without running anything."""
    bench = LearningBenchmark(settings, out)
    if not plan["tasks"] and not (out / "selection.json").is_file():
        raise SystemExit(f"bench.learning: {out} has no finished selection pass yet: nothing to summarise")
    tasks, easy = (plan["tasks"], []) if plan["tasks"] else _select(bench, plan, args)
    commit = started_at_commit(out)
    line = _summary(args, plan, bench, tasks, easy, settings, model_meta(settings), commit, interim=True)
    print(f"[learning] interim results: {out} (summary.md, summary.json)", file=sys.stderr)
    return {**line, "results": str(out)}


def _llm_budget(out: Path, settings) -> dict[str, Any]:
    """max_tokens and temperature as the runs recorded them (the model's own settings apply only
    once it is served, so the command line's settings may not say)."""
    for summary in sorted((out / "arms").glob("*/summary.json")):
        llm = json.loads(summary.read_text()).get("settings", {}).get("llm", {})
        if "max_tokens" in llm:
            return {"max_tokens": llm["max_tokens"], "temperature": llm.get("temperature")}
    return {"max_tokens": settings.llm.max_tokens, "temperature": settings.llm.temperature}


def _summary(args: argparse.Namespace, plan: dict[str, Any], bench: LearningBenchmark, tasks: list[Path],
             easy: list[str], settings, model: dict[str, Any], commit: str | None, *, interim: bool) -> dict[str, Any]:
    out = bench.out
    runs = [(replicate, arm, run_name(replicate, arm)) for replicate, arm, _ in _planned_runs(plan, tasks, args.seed)]
    meta = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"), "git_commit": commit,
        "summarised_at_commit": git_commit(), "machine": machine(),
        "model": model, "seeds": [args.seed + r for r in range(plan["replicates"])], "suite": portable(plan["suite"]),
        "results": str(out), "tasks": [p.stem for p in tasks], "families": {p.stem: family(p) for p in tasks},
        "easy": easy, "transfer_tasks": [p.stem for p in tasks if level_of(p) == 2],
        "orders": {r: [p.stem for p in replicate_order(tasks, r, args.seed)] for r in range(plan["replicates"])},
        "budgets": {"operators": len(tasks), "iterations": plan["iterations"], "replicates": plan["replicates"],
                    "selection": f"{args.select_iterations} attempt(s) x {len(plan['pool'])} pool operators"
                    if plan["pool"] else "none (--tasks)",
                    **_llm_budget(out, settings)},
    }
    target = None
    if args.publish:
        name = f"{meta['date'][:10]}-{model['name'].replace('/', '_')}" + ("-interim" if interim else "")
        target = publish_folder(REPOSITORY / "bench" / "results", name, out)
    finished = [name for _, _, name in runs if bench.finished(name)]
    line = summarise(out, runs, finished, meta, target)
    if target is not None and not interim:
        drop_interim_publication(REPOSITORY / "bench" / "results", out)
    return line


if __name__ == "__main__":
    sys.exit(main())
