"""Learning benchmark v3: pass@1 of fresh drafts on held-out operators, each arm's bank frozen
after a learning pass (docs/learning_benchmark.md, "v3"; issue 27).

1. Screening: cold drafts (retrieval none, the seeded bank read-only, draft only) of every pool
   operator; the band (solved sometimes) decides the held-out operators and the curriculum
   (bench/learning_screening.py).
2. Learning: per arm (none, similarity, value) the normal online campaign over the curriculum,
   building that arm's bank (resumable operator by operator, bench/learning_arms.py).
3. Evaluation: k passes of one fresh draft per held-out operator against each arm's frozen bank
   (bench/learning_frozen.py), arms interleaved pass by pass.

The results folder is the state: run the same command again to resume. Prints one JSON line.

    python -m bench.learning --v3 --dry-run --backend cpu
    nice -n 10 python -m bench.learning --v3 --backend cpu --out runs/learning-v3-cpu
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.learning_arms import ARMS, LearningBenchmark, note_commit
from bench.learning_frozen import (
    FrozenBankChanged,
    bank_digest,
    finished,
    run_draft_pass,
)
from bench.learning_reuse import reusable_screening
from bench.learning_screening import Rule, pool_globs
from bench.learning_selection import resolve
from bench.learning_session import build_settings, model_meta, portable, run_resumable
from bench.learning_summary import (
    drop_interim_publication,
    git_commit,
    machine,
    publish_folder,
    started_at_commit,
)
from bench.learning_v3_screen import ThinBand, screen, screening_progress
from bench.learning_v3_summary import (
    PRIMARY,
    eval_figures,
    evaluate,
    headline,
    learning_figures,
    render,
)
from launch.campaign import CampaignError

REPOSITORY = Path(__file__).resolve().parents[1]
V3_ARMS = ("none", "similarity", "value")
# The published v2 run measured 66-85 s an attempt (its two replicates, 2026-11-24); drafts of
# v3 have the same prompts, so the estimate takes the slower figure.
SECONDS_PER_ATTEMPT = 85.0
SECONDS_PER_ATTEMPT_FAST = 66.0
DOMAIN_FLOOR = {"cpu": False, "npu-twin": True}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.learning --v3", description=__doc__.splitlines()[0])
    p.add_argument("--backend", choices=sorted(PRIMARY), default="cpu", help="domain: plain C (cpu) or Ascend C "
                   "on the CPU twin (npu-twin)")
    p.add_argument("--out", default=None, help="results folder (default runs/learning-v3-<backend>); rerun to resume")
    p.add_argument("--suite", default=None, help="task folder (default: bundled suites/cpu)")
    p.add_argument("--pool", default=None, help="comma-separated globs of the screening pool (default: the v3 families)")
    p.add_argument("--wide-pool", action="store_true", help="the v3 families plus the near-copies added when the "
                   "cpu band was thin (level-1 tasks 66-92 and four more activations)")
    p.add_argument("--reuse-screening", default=None, metavar="DIR", help="take the screening drafts of this earlier "
                   "v3 folder (same backend, suite, seed and rule; prompts checked identical) and draft only the rest")
    p.add_argument("--arms", default=",".join(V3_ARMS), help="comma-separated subset of none,similarity,value")
    p.add_argument("--screen-drafts", type=int, default=3, help="cold drafts per pool operator (stage 1)")
    p.add_argument("--eval-drafts", type=int, default=8, help="k: fresh drafts per held-out operator and arm")
    p.add_argument("--iterations", type=int, default=6, help="attempts per curriculum operator in the learning pass")
    p.add_argument("--max-heldout", type=int, default=24)
    p.add_argument("--max-curriculum", type=int, default=12)
    p.add_argument("--min-heldout", type=int, default=8, help="fewer held-out operators stop the run before learning")
    p.add_argument("--seed", type=int, default=0, help="memory.seed of the learning pass (evaluation pass r: seed+100+r)")
    p.add_argument("--llm-base-url", default=None)
    p.add_argument("--llm-model", default=None)
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="any other setting")
    p.add_argument("--seconds-per-attempt", type=float, default=SECONDS_PER_ATTEMPT)
    p.add_argument("--dry-run", action="store_true", help="print the plan and its estimated duration, run nothing")
    p.add_argument("--summary-so-far", action="store_true", help="run nothing: summarise what --out holds")
    p.add_argument("--publish", action="store_true", help="copy summary.md/.json into bench/results/")
    return p.parse_args(argv)


def plan_of(args: argparse.Namespace) -> dict[str, Any]:
    from launch.campaign import default_suite

    suite = Path(args.suite).expanduser().resolve() if args.suite else default_suite()
    arms = [a.strip() for a in args.arms.split(",") if a.strip()]
    if set(arms) - set(V3_ARMS):
        raise SystemExit(f"bench.learning --v3: arms are {', '.join(V3_ARMS)}")
    if args.pool and args.wide_pool:
        raise SystemExit("bench.learning --v3: --pool or --wide-pool, not both")
    pool = resolve(suite, [g.strip() for g in args.pool.split(",")] if args.pool else pool_globs(args.wide_pool))
    if not pool:
        raise SystemExit(f"bench.learning --v3: the screening pool is empty in {suite}")
    reuse = Path(args.reuse_screening).expanduser().resolve() if args.reuse_screening else None
    if args.screen_drafts < 2 or args.eval_drafts < 1 or args.iterations < 1:
        raise SystemExit("bench.learning --v3: --screen-drafts >= 2, --eval-drafts and --iterations >= 1")
    rule = Rule(drafts=args.screen_drafts, floor_admitted=DOMAIN_FLOOR[args.backend],
                extra_drafts=args.screen_drafts, minimum=args.min_heldout, max_heldout=args.max_heldout,
                max_curriculum=args.max_curriculum)
    return {"backend": args.backend, "suite": suite, "pool": pool, "arms": arms, "rule": rule, "reuse": reuse}


def estimate(plan: dict[str, Any], args: argparse.Namespace, reused: int = 0) -> dict[str, Any]:
    """Attempts and hours of the plan; `reused` stage-1 drafts come from an earlier folder."""
    rule, arms = plan["rule"], len(plan["arms"])
    screening = len(plan["pool"]) * rule.drafts - reused
    screening_max = screening + len(plan["pool"]) * rule.extra_drafts
    learning = arms * min(rule.max_curriculum, len(plan["pool"])) * args.iterations
    evaluation = arms * min(rule.max_heldout, len(plan["pool"])) * args.eval_drafts
    attempts, most = screening + learning + evaluation, screening_max + learning + evaluation
    return {"screening_attempts": screening, "screening_attempts_with_stage2": screening_max,
            "learning_attempts_max": learning, "evaluation_attempts_max": evaluation,
            "attempts": attempts, "attempts_max": most, "seconds_per_attempt": args.seconds_per_attempt,
            "estimated_s": round(attempts * args.seconds_per_attempt),
            "estimated_s_at_66": round(attempts * SECONDS_PER_ATTEMPT_FAST),
            "estimated_s_max": round(most * args.seconds_per_attempt)}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    plan = plan_of(args)
    # an earlier folder that cannot lend its drafts is refused here, before anything starts
    earlier = reusable_screening(plan["reuse"], plan, args.seed) if plan["reuse"] else {}
    reused = sum(len(earlier.get(r, {})) for r in range(plan["rule"].drafts))
    guess = estimate(plan, args, reused)
    rule = plan["rule"]
    print(f"[learning v3] plan ({args.backend}): screening {len(plan['pool'])} operators x {rule.drafts} cold drafts "
          f"({guess['screening_attempts']}{f' new, {reused} reused' if reused else ''}; up to {guess['screening_attempts_with_stage2']} with stage 2), learning "
          f"{len(plan['arms'])} arms x <= {rule.max_curriculum} operators x {args.iterations} iterations, evaluation "
          f"{len(plan['arms'])} arms x <= {rule.max_heldout} held-out operators x {args.eval_drafts} drafts: about "
          f"{guess['attempts']} attempts, {guess['estimated_s'] / 3600:.1f} h at {args.seconds_per_attempt:.0f} s an "
          f"attempt ({guess['estimated_s_at_66'] / 3600:.1f} h at {SECONDS_PER_ATTEMPT_FAST:.0f} s; at most "
          f"{guess['estimated_s_max'] / 3600:.1f} h)", file=sys.stderr)
    if args.dry_run:
        print(json.dumps({"bench": "learning", "design": "v3", "dry_run": True, "backend": args.backend, **guess,
                          "pool": [p.stem for p in plan["pool"]], "arms": plan["arms"],
                          "primary": "_vs_".join(PRIMARY[args.backend]), "eval_drafts": args.eval_drafts,
                          "iterations": args.iterations, "rule": rule.__dict__}))
        return 0
    from npu_pool.backends import backend_status

    available, why = backend_status(args.backend)
    if not available and not args.summary_so_far:
        raise SystemExit(f"bench.learning --v3: backend {args.backend} cannot run here: {why}")
    # the kernel format in both domains (plain C; Ascend C on the twin), as the local model's own
    # settings say; an endpoint would otherwise get `auto`. A --set given later wins.
    args.set = [f"harness.backend={args.backend}", "llm.candidate_format=kernel", *args.set]
    settings = build_settings(args)
    from launch.logging import configure_logging

    configure_logging(settings.log_json, settings.log_level)
    out = Path(args.out or f"runs/learning-v3-{args.backend}").expanduser().resolve()
    out.mkdir(parents=True, exist_ok=True)
    _check_same_plan(out, plan, args)
    if args.summary_so_far:
        if not (out / "screening.json").is_file():  # screening under way: where it stands
            progress = screening_progress(out, plan, args.seed)
            done = sum(p["drafted"] + p["reused"] for p in progress["passes"].values())
            print(f"[learning v3] {out}: screening under way, {done} drafts so far (stage 1: "
                  f"{progress['stage1_drafts']}), solved at least once: "
                  f"{', '.join(progress['solved_at_least_once']) or 'none'}", file=sys.stderr)
            print(json.dumps(progress))
            return 0
        print(json.dumps(summarise(args, plan, out, model_meta(settings))))
        return 0
    return run_resumable("learning v3", out, settings, lambda settings, model: run(args, plan, settings, out, model),
                         (CampaignError, FrozenBankChanged, ThinBand))


def _check_same_plan(out: Path, plan: dict[str, Any], args: argparse.Namespace) -> None:
    recorded = {"design": "v3", "backend": args.backend, "suite": portable(plan["suite"]),
                "pool": [p.stem for p in plan["pool"]], "arms": plan["arms"],
                "rule": plan["rule"].__dict__, "eval_drafts": args.eval_drafts, "iterations": args.iterations,
                "seed": args.seed}
    if plan["reuse"]:  # only when given: folders started before the flag keep their recorded plan
        recorded["reuse_screening"] = portable(plan["reuse"])
    path = out / "plan.json"
    if path.is_file() and json.loads(path.read_text()) != recorded:
        raise SystemExit(f"bench.learning --v3: {out} holds a benchmark with another plan ({path}); "
                         "pick a new --out or repeat that benchmark's flags")
    path.write_text(json.dumps(recorded, indent=2) + "\n")


def run(args: argparse.Namespace, plan: dict[str, Any], settings, out: Path, model: dict[str, Any]) -> dict[str, Any]:
    bench = LearningBenchmark(settings, out)
    started_at_commit(out)
    screening = screen(bench, plan, settings, args.seed)
    by_stem = {p.stem: p for p in plan["pool"]}
    heldout = [by_stem[s] for s in screening["heldout"]]
    curriculum = [by_stem[s] for s in screening["curriculum"]]
    print(f"[learning v3] held out: {', '.join(screening['heldout'])}; curriculum: {', '.join(screening['curriculum'])}",
          file=sys.stderr)
    frozen = out / "frozen.json"
    digests = json.loads(frozen.read_text()) if frozen.is_file() else {}
    for arm in plan["arms"]:
        bench.run_arm(f"learn-{arm}", ARMS[arm], curriculum, args.iterations, args.seed)
        bank = bench.banks / f"learn-{arm}"
        if not bank.is_dir():
            raise ThinBand(f"{bank} is missing: the evaluation needs the bank the learning pass built (commit "
                           f"banks/learn-* with the state, or delete arms/learn-{arm} to learn again)")
        digests.setdefault(arm, bank_digest(bank, settings))  # frozen from here on
        frozen.write_text(json.dumps(digests, indent=2) + "\n")
    for r in range(args.eval_drafts):
        for arm in plan["arms"]:  # interleaved: the machine's load falls on every arm alike
            bank = bench.banks / f"learn-{arm}"
            if bank_digest(bank, settings) != digests[arm]:
                raise FrozenBankChanged(f"{bank} is not the bank its learning pass left (frozen.json)")
            run_dir = bench.arm_dir(f"eval-{arm}-d{r}")
            if not finished(run_dir):
                note_commit(run_dir, "resumed" if (run_dir / "summary.json").is_file() else "started")
            run_draft_pass(settings, run_dir, bank, ARMS[arm], heldout, args.seed + 100 + r,
                           f"learning-v3-eval-{arm}-d{r}")
    return summarise(args, plan, out, model)


def summarise(args: argparse.Namespace, plan: dict[str, Any], out: Path, model: dict[str, Any]) -> dict[str, Any]:
    screening_path = out / "screening.json"
    if not screening_path.is_file():
        raise SystemExit(f"bench.learning --v3: {out} has no finished screening yet")
    screening = json.loads(screening_path.read_text())
    if screening.get("stopped"):
        raise SystemExit(f"bench.learning --v3: {out} stopped at screening ({screening['stopped']}): no learning or "
                         "evaluation to summarise; screening.json holds every outcome")
    learning = learning_figures(out, plan["arms"], args.iterations)
    evaluation = {arm: eval_figures(arm, [out / "arms" / f"eval-{arm}-d{r}" for r in range(args.eval_drafts)],
                                    screening["heldout"]) for arm in plan["arms"]}
    tests, verdict = evaluate(args.backend, evaluation)
    line = headline(args.backend, learning, evaluation, tests, verdict)
    planned = [f"learn-{a}" for a in plan["arms"]] + [f"eval-{a}-d{r}" for r in range(args.eval_drafts)
                                                      for a in plan["arms"]]
    meta = {"date": datetime.now(UTC).isoformat(timespec="seconds"), "git_commit": started_at_commit(out),
            "summarised_at_commit": git_commit(), "machine": machine(), "model": model, "backend": args.backend,
            "results": str(out), "screening": screening, "heldout": screening["heldout"],
            "curriculum": screening["curriculum"], "iterations": args.iterations, "eval_drafts": args.eval_drafts,
            "complete": all(finished(out / "arms" / name) for name in planned),
            "pending": [name for name in planned if not finished(out / "arms" / name)]}
    summary = {"meta": meta, "learning": list(learning.values()), "evaluation": list(evaluation.values()),
               "tests": tests, "verdict": verdict, "headline": line}
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    (out / "summary.md").write_text(render(meta, learning, evaluation, tests, verdict, line))
    if args.publish:
        name = f"{meta['date'][:10]}-{str(model.get('name')).replace('/', '_')}-v3-{args.backend}"
        target = publish_folder(REPOSITORY / "bench" / "results", name + ("" if meta["complete"] else "-interim"), out)
        target.mkdir(parents=True, exist_ok=True)
        for file in ("summary.md", "summary.json"):
            shutil.copyfile(out / file, target / file)
        if meta["complete"]:
            drop_interim_publication(REPOSITORY / "bench" / "results", out)
    print(f"[learning v3] results: {out} (summary.md, summary.json)", file=sys.stderr)
    return {**line, "results": str(out)}
