"""The learning benchmark's command: does the memory help a model on operators it solves only
sometimes? pass@1 of fresh drafts on held-out operators, each arm's bank frozen after a learning
pass (docs/learning_benchmark.md; issue 27).

1. Screening (screening.py): cold drafts of every pool operator; the band (solved sometimes)
   decides the held-out operators and the curriculum.
2. Learning pass (learning_pass.py): per arm (none, similarity, value) the normal online
   campaign over the curriculum, building that arm's bank.
3. Frozen evaluation (evaluation.py): k passes of one fresh draft per held-out operator against
   each arm's frozen bank, arms interleaved pass by pass.
4. Statistics and summary (stats.py, summary.py): pass@1 per arm, the pre-registered paired
   test, summary.md/.json; --publish copies them to bench/results/ (publish.py).

The results folder is the state: run the same command again to resume (resume.py). A published
run's raw state is an archive in its bench/results/ folder (archive.py). Prints one JSON line.

    python -m bench.learning --dry-run --backend cpu
    nice -n 10 python -m bench.learning --backend cpu --out runs/learning-v3-cpu
    python -m bench.learning --out DIR --summary-so-far
    python -m bench.learning unpack bench/results/<run> --to DIR   # a published run's raw state
    python -m bench.learning rederive bench/results/<run>          # its tables again, from the archive
    python -m bench.learning learn --tasks 4_ReLU,5_GELU --arms similarity --out DIR   # a learning pass alone
    python -m bench.learning pilot --backend npu-twin --out DIR    # first rungs against the bare brief (pilot.py)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from bench.learning.evaluation import FrozenBankChanged, evaluate_frozen
from bench.learning.learning_pass import LearningBenchmark
from bench.learning.plan import (
    ARMS,
    COLD_RATE_DESIGNS,
    LOAD_PROOF,
    NO_STOP_RULES,
    PRIMARY,
    SECONDS_PER_ATTEMPT_FAST,
    TARGETS,
    check_same_plan,
    estimate,
    parse_args,
    plan_in,
    plan_of,
    resolve,
)
from bench.learning.publish import started_at_commit
from bench.learning.resume import bench_settings, build_settings, model_meta, run_resumable
from bench.learning.reuse import lent_drafts
from bench.learning.screening import (
    ThinBand,
    arm_episodes,
    arm_memories,
    screen,
    screening_progress,
)
from bench.learning.summary import rederive, summarise
from launch.campaign import CampaignError

COMMANDS = ("unpack", "rederive", "pack", "learn", "checkpoint", "pilot")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in COMMANDS:
        if argv[0] == "learn":
            return learn_only(argv[1:])
        if argv[0] == "rederive":
            return rederive_command(argv[1:])
        if argv[0] == "pilot":
            from bench.learning.pilot import main as pilot_main

            return pilot_main(argv[1:])
        if argv[0] == "checkpoint":
            from bench.learning.checkpoint import main as checkpoint_main

            return checkpoint_main(argv[1:])
        from bench.learning.archive import main as archive_main

        return archive_main(argv)
    if "--v3" in argv:  # the switch of the days when v2 and v3 lived side by side
        print("[learning] --v3 is the only design now: the flag is ignored (and will go)", file=sys.stderr)
        argv = [a for a in argv if a != "--v3"]
    args = parse_args(argv)
    if args.summary_so_far:
        return summary_so_far(args)
    plan = plan_of(args)
    out = Path(args.out or f"runs/learning-{args.design}-{args.backend}").expanduser().resolve()
    # the earlier folder is read once, here: one that cannot lend its drafts is refused before anything
    # starts; once the screening is done (screening.json) it is needed no more (a resume elsewhere)
    screened = not args.dry_run and (out / "screening.json").is_file()
    reused = 0 if screened else sum(len(lent_drafts(plan, args.seed).get(r, {})) for r in range(plan["rule"].drafts))
    guess = estimate(plan, args.seconds_per_attempt, reused)
    rule = plan["rule"]
    print(f"[learning] plan ({args.backend}): screening {len(plan['pool'])} operators x {rule.drafts} cold drafts "
          f"({guess['screening_attempts']}{f' new, {reused} reused' if reused else ''}; up to "
          f"{guess['screening_attempts_with_stage2']} with stage 2), learning {len(plan['arms'])} arms x <= "
          f"{rule.max_curriculum} operators x {args.iterations} iterations, evaluation {len(plan['arms'])} arms x <= "
          f"{rule.max_heldout} held-out operators x {args.eval_drafts} drafts: about {guess['attempts']} attempts, "
          f"{guess['estimated_s'] / 3600:.1f} h at {args.seconds_per_attempt:.0f} s an attempt "
          f"({guess['estimated_s_at_66'] / 3600:.1f} h at {SECONDS_PER_ATTEMPT_FAST:.0f} s; at most "
          f"{guess['estimated_s_max'] / 3600:.1f} h)", file=sys.stderr)
    if args.dry_run:
        print(json.dumps({"bench": "learning", "design": args.design, "dry_run": True, "backend": args.backend,
                          **guess, "pool": [p.stem for p in plan["pool"]], "arms": plan["arms"],
                          "primary": TARGETS[args.design, args.backend].name, "eval_drafts": args.eval_drafts,
                          "iterations": args.iterations, "rule": rule.__dict__}))
        return 0
    settings = design_settings(args)
    out.mkdir(parents=True, exist_ok=True)
    check_same_plan(out, plan)
    return run_resumable("learning", out, settings, lambda settings, model: run(args, plan, settings, out, model),
                         (CampaignError, FrozenBankChanged, ThinBand))


def design_settings(args: argparse.Namespace):
    """The benchmark's settings for the design on the command line: v4's to v6's load-proof limits,
    and no stop rules (every design's learning pass keeps its volume)."""
    load_proof = LOAD_PROOF if getattr(args, "design", "v3") in COLD_RATE_DESIGNS else []
    return bench_settings(args, [*load_proof, *NO_STOP_RULES])


def run(args: argparse.Namespace, plan: dict[str, Any], settings, out: Path, model: dict[str, Any]) -> dict[str, Any]:
    bench = LearningBenchmark(settings, out)
    started_at_commit(out)
    screening = screen(bench, plan, settings, args.seed)
    by_stem = {p.stem: p for p in plan["pool"]}
    heldout = [by_stem[s] for s in screening["heldout"]]
    curriculum = [by_stem[s] for s in screening["curriculum"]]
    print(f"[learning] held out: {', '.join(screening['heldout'])}; curriculum: {', '.join(screening['curriculum'])}",
          file=sys.stderr)
    learning, evaluation = arm_memories(plan, screening, out)
    digests = bench.learn(plan["arms"], curriculum, args.iterations, args.seed, learning, arm_episodes(plan))
    evaluate_frozen(settings, out, plan["arms"], heldout, digests, args.eval_drafts, args.seed, evaluation)
    return summarise(out, plan, model, args.publish)


def summary_so_far(args: argparse.Namespace) -> int:
    """The table of what --out holds, by the plan its plan.json records, from any directory and
    with no other flag: nothing runs and nothing is served. Before the screening has finished,
    where it stands."""
    if not args.out:
        raise SystemExit("bench.learning: --summary-so-far needs --out naming a benchmark's results folder")
    out = Path(args.out).expanduser().resolve()
    plan = plan_in(out)
    if not (out / "screening.json").is_file():
        progress = screening_progress(out, plan, plan["seed"])
        done = sum(p["drafted"] + p["reused"] for p in progress["passes"].values())
        print(f"[learning] {out}: screening under way, {done} drafts so far (stage 1: {progress['stage1_drafts']}), "
              f"solved at least once: {', '.join(progress['solved_at_least_once']) or 'none'}", file=sys.stderr)
        print(json.dumps(progress))
        return 0
    settings = build_settings(args)
    print(json.dumps(summarise(out, plan, model_meta(settings), args.publish)))
    return 0


def learn_only(argv: list[str]) -> int:
    """A learning pass alone over given operators, no screening or evaluation: a smoke of the
    model and the memory, and the run bench/attempt_record.py records prompts from."""
    p = argparse.ArgumentParser(prog="python -m bench.learning learn", description=learn_only.__doc__.split(":")[0])
    p.add_argument("--tasks", required=True, help="comma-separated task globs, run in the order given")
    p.add_argument("--arms", default="similarity", help=f"comma-separated subset of {','.join(ARMS)}")
    p.add_argument("--iterations", type=int, default=3)
    p.add_argument("--backend", choices=sorted(PRIMARY), default="cpu")
    p.add_argument("--out", required=True, help="results folder; rerun to resume")
    p.add_argument("--suite", default=None, help="task folder (default: bundled suites/cpu)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--llm-base-url", default=None)
    p.add_argument("--llm-model", default=None)
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    args = p.parse_args(argv)
    from launch.campaign import default_suite

    suite = Path(args.suite).expanduser().resolve() if args.suite else default_suite()
    tasks = resolve(suite, [g.strip() for g in args.tasks.split(",") if g.strip()])
    arms = [a.strip() for a in args.arms.split(",") if a.strip()]
    if not tasks or set(arms) - set(ARMS):
        raise SystemExit(f"bench.learning learn: no task matches {args.tasks!r} in {suite}, or an arm is not one "
                         f"of {', '.join(ARMS)}")
    out = Path(args.out).expanduser().resolve()
    settings = design_settings(args)

    def work(settings, model: dict[str, Any]) -> dict[str, Any]:
        LearningBenchmark(settings, out).learn(arms, tasks, args.iterations, args.seed)
        return {"bench": "learning", "learning_pass_only": True, "arms": arms, "results": str(out), "model": model}

    return run_resumable("learning", out, settings, work, (CampaignError, FrozenBankChanged))


def rederive_command(argv: list[str]) -> int:
    """`rederive bench/results/<run>`: its tables from its archive; exit 1 when any differs."""
    p = argparse.ArgumentParser(prog="python -m bench.learning rederive", description=rederive_command.__doc__)
    p.add_argument("result", type=Path, help="a published run's folder (bench/results/<run>)")
    line = rederive(p.parse_args(argv).result)
    print(json.dumps(line))
    return 0 if line["match"] else 1
