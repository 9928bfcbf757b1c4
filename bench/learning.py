"""Learning benchmark: does the memory help a model on operators it mostly fails cold?

Arms, each a single-process campaign (launch.campaign.Campaign) with the same operators,
iterations, model and memory.seed, each from a fresh copy of one bank seeded with the
backend's API bundle:

- `none`, `similarity`, `value`: the retrieval modes, over the selected operators
  (level-2 ones first, so the value arm's level-2 operators meet a cold bank);
- `transfer-warm` then `transfer`: value mode over the selected level-1 operators, then the
  selected level-2 operators on that warmed bank (compare with the value arm on them).

Without --tasks a selection pass (retrieval none, --select-iterations attempts each) runs
over a pool of reductions, softmax, norms, matmul variants, pooling, scans and level-2
fused operators, and the N with the lowest feasibility are kept. A killed benchmark is
resumed by running the same command again: finished arms are skipped, an unfinished one
restarts from its fresh bank. Run by hand, never in CI. Prints one JSON line at the end.

    python -m bench.learning --dry-run                 # the plan and its estimated duration
    python -m bench.learning --out runs/learning       # local model, default size
    python -m bench.learning --full --llm-base-url URL --llm-model M
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import signal
import sys
import time
from contextlib import ExitStack
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPOSITORY = Path(__file__).resolve().parents[1]
if str(REPOSITORY) not in sys.path:
    sys.path.insert(0, str(REPOSITORY))

from bench.learning_selection import POOL, hardest, level_of, resolve  # noqa: E402
from bench.learning_summary import arm_figures, file_sha256, git_commit, machine, render_markdown  # noqa: E402
from launch.campaign import Campaign, CampaignError, default_suite  # noqa: E402

MAIN_ARMS = ("none", "similarity", "value")
# 37 + 3 x 36 + 36 = 181 attempts: about 2 h at the 40 s an attempt measured on 2 idle cores.
DEFAULT = {"operators": 6, "iterations": 6}
FULL = {"operators": 16, "iterations": 30}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.learning", description=__doc__.splitlines()[0])
    p.add_argument("--out", default=None, help="results folder (default runs/learning-<time>); rerun to resume")
    p.add_argument("--suite", default=None, help="task folder (default: bundled suites/cpu)")
    p.add_argument("--tasks", default=None, help="comma-separated task globs: skip the selection pass")
    p.add_argument("--pool", default=None, help="comma-separated globs for the selection pass (default: the families)")
    p.add_argument("--operators", type=int, default=None, help=f"operators kept (default {DEFAULT['operators']})")
    p.add_argument("--iterations", type=int, default=None, help=f"attempts per operator (default {DEFAULT['iterations']})")
    p.add_argument("--select-iterations", type=int, default=1, help="attempts per pool operator in the selection pass")
    p.add_argument("--full", action="store_true",
                   help=f"paper size: {FULL['operators']} operators x {FULL['iterations']} iterations")
    p.add_argument("--arms", default="none,similarity,value,transfer", help="comma-separated subset of the arms")
    p.add_argument("--seed", type=int, default=0, help="memory.seed of every arm")
    p.add_argument("--llm-base-url", default=None, help="OpenAI-compatible endpoint (default: serve the local model)")
    p.add_argument("--llm-model", default=None, help="model name at that endpoint")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="any other setting")
    p.add_argument("--seconds-per-attempt", type=float, default=40.0, help="for the duration estimate")
    p.add_argument("--dry-run", action="store_true", help="print the plan and its estimated duration, run nothing")
    p.add_argument("--publish", action="store_true", help="copy summary.md/.json into bench/results/<date>-<model>/")
    return p.parse_args(argv)


def build_settings(args: argparse.Namespace):
    from launch.cli import UsageError, config_overrides
    from launch.config import load_settings

    namespace = argparse.Namespace(set=args.set)
    try:
        overrides = config_overrides(namespace)
    except UsageError as exc:
        raise SystemExit(f"bench.learning: {exc}") from None
    llm = overrides.setdefault("llm", {})
    if args.llm_base_url:
        llm["base_url"] = args.llm_base_url
    if args.llm_model:
        llm["model"] = args.llm_model
    overrides.setdefault("memory", {})["seed"] = args.seed
    return load_settings(None, overrides)


class LearningBenchmark:
    """Runs the arms one after another into one results folder; finished arms are skipped."""

    def __init__(self, settings, out: Path):
        self.settings, self.out = settings, out
        self.banks = out / "banks"
        self.arms_dir = out / "arms"

    def arm_dir(self, arm: str) -> Path:
        return self.arms_dir / arm

    def finished(self, arm: str) -> bool:
        summary = self.arm_dir(arm) / "summary.json"
        if not summary.is_file():
            return False
        data = json.loads(summary.read_text())
        return bool(data.get("finished_at")) and not data.get("error")

    def seed_bank(self) -> Path:
        """The seeded empty bank every arm starts from (a copy of it), made once."""
        from memory_actor.bank import MemoryBank
        from memory_actor.seeding import seed_items
        from npu_pool.backends import get_backend

        template = self.banks / "seeded"
        done = self.banks / "seeded.done"
        if done.exists():
            return template
        shutil.rmtree(template, ignore_errors=True)
        backend = get_backend(self.settings.harness.backend).name
        bank = MemoryBank(self.settings.memory.model_copy(update={"uri": str(template)}))
        try:
            bank.add(seed_items(backend, set(bank.items)))
        finally:
            bank.close()
        done.write_text(backend + "\n")
        return template

    def run_arm(self, arm: str, retrieval: str, tasks: list[Path], bank_from: Path, iterations: int) -> None:
        if self.finished(arm):
            print(f"[learning] {arm}: finished earlier, skipped", file=sys.stderr)
            return
        bank = self.banks / arm
        shutil.rmtree(bank, ignore_errors=True)
        shutil.rmtree(self.arm_dir(arm), ignore_errors=True)
        shutil.copytree(bank_from, bank)
        settings = self.settings.model_copy(update={
            "memory": self.settings.memory.model_copy(update={"uri": str(bank), "retrieval": retrieval}),
            "episode": self.settings.episode.model_copy(update={"iterations": iterations}),
        })
        print(f"[learning] {arm}: retrieval={retrieval}, {len(tasks)} operators x {iterations} iterations",
              file=sys.stderr)
        started = time.perf_counter()
        campaign = Campaign(settings, self.arm_dir(arm), run_id=f"learning-{arm}-{self.out.name}")
        asyncio.run(campaign.run(tasks))
        print(f"[learning] {arm}: done in {time.perf_counter() - started:.0f} s", file=sys.stderr)


def _plan(args: argparse.Namespace) -> dict[str, Any]:
    size = FULL if args.full else DEFAULT
    operators = args.operators or size["operators"]
    iterations = args.iterations or size["iterations"]
    suite = Path(args.suite).expanduser().resolve() if args.suite else default_suite()
    arms = [a.strip() for a in args.arms.split(",") if a.strip()]
    unknown = set(arms) - {*MAIN_ARMS, "transfer"}
    if unknown:
        raise SystemExit(f"bench.learning: unknown arm(s) {', '.join(sorted(unknown))}")
    if args.tasks:
        tasks = resolve(suite, [g.strip() for g in args.tasks.split(",") if g.strip()])
        if not tasks:
            raise SystemExit(f"bench.learning: no task in {suite} matches {args.tasks!r}")
        pool: list[Path] = []
    else:
        pool = resolve(suite, [g.strip() for g in args.pool.split(",")] if args.pool
                       else [g for globs in POOL.values() for g in globs])
        if not pool:
            raise SystemExit(f"bench.learning: the selection pool is empty in {suite}")
        tasks = []
    return {"suite": suite, "operators": operators, "iterations": iterations, "arms": arms, "tasks": tasks,
            "pool": pool}


def estimate(plan: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    n = len(plan["tasks"]) or min(plan["operators"], len(plan["pool"]))
    main = sum(arm in MAIN_ARMS for arm in plan["arms"]) * n * plan["iterations"]
    transfer = n * plan["iterations"] if "transfer" in plan["arms"] else 0
    select = len(plan["pool"]) * args.select_iterations
    attempts = main + transfer + select
    return {"attempts": attempts, "selection_attempts": select, "seconds_per_attempt": args.seconds_per_attempt,
            "estimated_s": round(attempts * args.seconds_per_attempt)}


def _ordered(tasks: list[Path]) -> list[Path]:
    """Level 2 first: the value arm's level-2 operators then meet a cold bank (the transfer baseline)."""
    return sorted(tasks, key=lambda p: -level_of(p))


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    plan = _plan(args)
    guess = estimate(plan, args)
    print(f"[learning] plan: arms {', '.join(plan['arms'])}; "
          f"{len(plan['tasks']) or str(plan['operators']) + ' selected from ' + str(len(plan['pool']))} operators "
          f"x {plan['iterations']} iterations; selection pass {guess['selection_attempts']} attempts; "
          f"{guess['attempts']} attempts in all, about {guess['estimated_s'] / 3600:.1f} h at "
          f"{args.seconds_per_attempt:.0f} s per attempt (the local model: 20-60 s each on 2 idle cores)",
          file=sys.stderr)
    if plan["tasks"] and args.dry_run:
        print("[learning] operators: " + ", ".join(p.stem for p in plan["tasks"]), file=sys.stderr)
    if args.dry_run:
        print(json.dumps({"bench": "learning", "dry_run": True, **guess,
                          "operators": [p.stem for p in plan["tasks"]] or None, "pool": [p.stem for p in plan["pool"]],
                          "iterations": plan["iterations"], "arms": plan["arms"]}))
        return 0
    from launch.logging import configure_logging

    settings = build_settings(args)
    configure_logging(settings.log_json, settings.log_level)  # one line per attempt: progress
    out = Path(args.out or f"runs/learning-{datetime.now(UTC):%Y%m%d-%H%M%S}").expanduser().resolve()
    out.mkdir(parents=True, exist_ok=True)
    _check_same_plan(out, plan, args)
    previous = signal.signal(signal.SIGTERM, _interrupt)
    started = time.perf_counter()
    try:
        with ExitStack() as stack:
            settings, model = _with_llm(settings, stack)
            result = _run(args, plan, settings, model, out)
    except KeyboardInterrupt:
        print(f"[learning] interrupted: run the same command again to resume ({out})", file=sys.stderr)
        return 130
    except CampaignError as exc:
        print(f"[learning] stopped: {exc}\n  run the same command again to resume ({out})", file=sys.stderr)
        return 1
    finally:
        signal.signal(signal.SIGTERM, previous)
    result["wall_s"] = round(time.perf_counter() - started, 1)
    print(json.dumps(result))
    return 0


def publish_folder(results: Path, name: str, out: Path) -> Path:
    """`results/name`, or `name-2`, `name-3`, ... when that folder holds another benchmark's
    summary (two benchmarks on one day with one model); republishing the same one overwrites."""
    for n in range(1, 1000):
        target = results / (name if n == 1 else f"{name}-{n}")
        try:
            published = json.loads((target / "summary.json").read_text())
        except (OSError, ValueError):
            return target
        if published.get("meta", {}).get("results") == str(out):
            return target
    raise SystemExit(f"bench.learning: too many published results named {name}")


def _check_same_plan(out: Path, plan: dict[str, Any], args: argparse.Namespace) -> None:
    """A results folder resumes only the benchmark that started it."""
    recorded = {"tasks": [p.stem for p in plan["tasks"]], "pool": [p.stem for p in plan["pool"]],
                "operators": plan["operators"], "iterations": plan["iterations"], "arms": plan["arms"],
                "seed": args.seed, "select_iterations": args.select_iterations, "suite": str(plan["suite"])}
    path = out / "plan.json"
    if path.is_file() and json.loads(path.read_text()) != recorded:
        raise SystemExit(f"bench.learning: {out} holds a benchmark with another plan ({path}); "
                         "pick a new --out or repeat that benchmark's flags")
    path.write_text(json.dumps(recorded, indent=2) + "\n")


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _with_llm(settings, stack) -> tuple[Any, dict[str, Any]]:
    """The endpoint given, or the local model served for the whole benchmark (one server, every arm)."""
    if settings.llm.base_url:
        return settings, {"name": settings.llm.model, "endpoint": settings.llm.base_url, "gguf_sha256": None}
    from launch.local_llm import LocalLLMError, local_llm_server, local_llm_settings
    from launch.local_llm_fetch import is_verified

    config = settings.local_llm
    try:
        base_url = stack.enter_context(local_llm_server(settings))
    except LocalLLMError as exc:
        raise SystemExit(f"bench.learning: {exc}\n  or pass --llm-base-url URL") from None
    spec = config.spec()
    if config.model_path:
        sha = file_sha256(Path(config.model_path).expanduser())
    else:
        path = config.cache_path() / spec.file_name
        sha = spec.sha256 if is_verified(path, spec) else file_sha256(path)
    return local_llm_settings(settings, base_url), {"name": spec.name, "endpoint": "local (llama-cpp-python)",
                                                    "gguf_sha256": sha}


def _select(bench: LearningBenchmark, plan: dict[str, Any], args: argparse.Namespace, seeded: Path) -> list[Path]:
    from launch.report import analyse_run

    cached = bench.out / "selection.json"
    if cached.is_file():
        names = json.loads(cached.read_text())["selected"]
        by_stem = {p.stem: p for p in plan["pool"]}
        return [by_stem[name] for name in names]
    bench.run_arm("selection", "none", plan["pool"], seeded, args.select_iterations)
    report = analyse_run(bench.arm_dir("selection"))
    rows = {row.task: row for row in report.operators}
    chosen = hardest(plan["pool"], rows, plan["operators"])
    cached.write_text(json.dumps({
        "selected": [p.stem for p in chosen], "iterations": args.select_iterations,
        "pool": {row.task: {"attempts": row.attempts, "feasible": row.feasible} for row in report.operators},
    }, indent=2) + "\n")
    return chosen


def _run(args: argparse.Namespace, plan: dict[str, Any], settings, model: dict[str, Any], out: Path) -> dict[str, Any]:
    from launch.report_writer import write_report

    bench = LearningBenchmark(settings, out)
    seeded = bench.seed_bank()
    tasks = plan["tasks"] or _select(bench, plan, args, seeded)
    tasks = _ordered(tasks)
    print("[learning] operators: " + ", ".join(p.stem for p in tasks), file=sys.stderr)
    warm = [p for p in tasks if level_of(p) == 1]
    level2 = [p for p in tasks if level_of(p) == 2]
    for arm in (a for a in MAIN_ARMS if a in plan["arms"]):
        bench.run_arm(arm, arm, tasks, seeded, plan["iterations"])
    arms = [a for a in MAIN_ARMS if a in plan["arms"]]
    if "transfer" in plan["arms"]:
        if warm and level2:
            bench.run_arm("transfer-warm", "value", warm, seeded, plan["iterations"])
            bench.run_arm("transfer", "value", level2, out / "banks" / "transfer-warm", plan["iterations"])
            arms.append("transfer")
        else:
            print("[learning] transfer: skipped (needs level-1 and level-2 operators)", file=sys.stderr)
    reports, _ = write_report([bench.arm_dir(arm) for arm in arms], out / "report")
    figures = [arm_figures(arm, report, [p.stem for p in level2]) for arm, report in zip(arms, reports, strict=True)]
    meta = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"), "git_commit": git_commit(), "machine": machine(),
        "model": model, "seed": args.seed, "suite": str(plan["suite"]), "results": str(out),
        "tasks": [p.stem for p in tasks], "warm_tasks": [p.stem for p in warm],
        "transfer_tasks": [p.stem for p in level2],
        "budgets": {"operators": len(tasks), "iterations": plan["iterations"],
                    "selection": f"{args.select_iterations} attempt(s) x {len(plan['pool'])} pool operators"
                    if plan["pool"] else "none (--tasks)",
                    "max_tokens": settings.llm.max_tokens, "temperature": settings.llm.temperature},
    }
    by_arm = {f["arm"]: f for f in figures}
    headline = {"bench": "learning", **{f"fast_0_{a}": by_arm[a]["fast_0_final"] for a in by_arm},
                **{f"speedup_best_over_first_{a}": by_arm[a]["median_speedup_best_over_first"] for a in by_arm}}
    if "transfer" in by_arm and "value" in by_arm and by_arm["value"]["fast_0_transfer_tasks"]:
        headline["fast_0_level2_cold_value"] = by_arm["value"]["fast_0_transfer_tasks"][-1]
        headline["fast_0_level2_warm_transfer"] = by_arm["transfer"]["fast_0_final"]
    summary = {"meta": meta, "arms": figures, "headline": headline}
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    (out / "summary.md").write_text(render_markdown(meta, figures, headline))
    if args.publish:
        target = publish_folder(REPOSITORY / "bench" / "results", f"{meta['date'][:10]}-{model['name'].replace('/', '_')}",
                                out)
        target.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(out / "summary.md", target / "summary.md")
        shutil.copyfile(out / "summary.json", target / "summary.json")
    print(f"[learning] results: {out} (summary.md, summary.json, report/report.html)", file=sys.stderr)
    spent = [json.loads((run / "summary.json").read_text())["totals"] for run in sorted(bench.arms_dir.iterdir())
             if (run / "summary.json").is_file()]  # selection pass and transfer warm-up included
    return {**headline, "results": str(out), "attempts": sum(t["attempts"] for t in spent),
            "tokens": sum(t["tokens"] for t in spent)}


if __name__ == "__main__":
    sys.exit(main())
