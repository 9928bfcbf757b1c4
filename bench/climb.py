"""The climb's refine pilot on the Ascend C twin (issue 65, point 3): do refinements of a correct
scalar kernel, shown the next rung up by the refine decision, reach a kernel a device would run
fast?

Written before any refinement ran (the analysis below is fixed; nothing is tuned to the result):

- **Operators**: the pilot set (bench/learning/pilot_tasks, p1..p6) and the v5 twin learning
  benchmark's curriculum (its 12 operators), each with a feasible first kernel written by the
  model from the ladder's first rung: the one the published runs kept (`ARCHIVED`: the pilot's
  rung arm, v5's learning pass, each that operator's first feasible draft), else the first
  feasible of up to `--drafts` (3) fresh drafts from the first rung (`episode.start_from_rung`,
  the seeded bank, frozen). Operators with none are listed and left out. Each first kernel is
  verified and profiled once on the twin (first/<task>.json): "scalar" where its modelled profile
  says first rung (actors/climb.rung_of: nothing copied through UB).
- **Arms**: `none` (retrieval none: the static refine brief, the profile's reading included) and
  `value` (retrieval value: the refine decision, the speed rungs among its options; the arm's
  bank learns across the operators of a seed, in plan order). Lessons off in both (they only add
  model calls); no stop rule ends an operator before its K refinements; the refine decision is
  online (Thompson), as in a user's run.
- **K refinements** per operator, arm and seed (`--k`, 6), from the first kernel (the episode's
  start-point set holds it; a correct refinement no slower than its start joins it); seeds
  `--seeds` (0,1,2): memory.seed and llm.seed (the requests' sampling seeds). Seeds outermost, arms
  interleaved per seed, so a stopped run is balanced.
- **Measures**, per operator, arm and seed: best/first = the first kernel's modelled latency over
  the best correct kernel's (the first included: 1.0 when nothing correct is faster), best/eager
  = eager's modelled latency over the best's. Per operator and arm: the median over seeds. Per
  arm: `median_best_over_first` over the operators whose first kernel is scalar; fast_1 and
  `share_within_2x_eager` (fast_0.5): the share of those operators whose best runs faster than
  eager, and at least half as fast as eager, by the per-operator median. What each refinement was
  shown (the rung word, `+merged` where the rung came with the kernel's formula carried into it,
  `+system` where that merged kernel was the refinement itself with no model call, or `bare`), its
  gate and modelled latency are listed per operator.

    python -m bench.climb run --out runs/climb-npu-twin [--k 6] [--seeds 0,1,2] [--drafts 3] [--arms none,value]
    python -m bench.climb summary --out runs/climb-npu-twin [--publish]
    python -m bench.climb sensitivity --out runs/climb-npu-twin   # best/first at other scalar costs

Rerun `run` with the same --out to resume: finished operators are skipped; an operator stopped
midway starts again from its arm's bank as it was before it (a copy kept until it finishes).
Modelled timings: the twin's cost model (docs/ascendc_twin.md, "The modelled cost"), not an NPU.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import tarfile
from pathlib import Path
from typing import Any

from bench.climb_sensitivity import sensitivity
from bench.climb_table import summarise
from bench.learning.plan import LOAD_PROOF, arm_memory
from bench.learning.publish import (
    REPOSITORY,
    started_at_commit,
)
from bench.learning.resume import bench_settings, model_meta, portable, run_resumable

NO_STOPS = {"plateau_refinements": 0}  # EpisodeConfig: refining never stops before its K refinements
ARMS: dict[str, dict[str, Any]] = {"none": {"retrieval": "none"}, "value": {"retrieval": "value", "shipped_rates": False}}
PILOT = REPOSITORY / "bench" / "learning" / "pilot_tasks"
SUITE = REPOSITORY / "suites" / "cpu" / "level1"
RESULTS = REPOSITORY / "bench" / "results"
V5 = "2026-12-04-qwen2.5-coder-1.5b-instruct-v5-npu-twin"
PILOT_RUN = "2026-12-03-qwen2.5-coder-1.5b-instruct-pilot-npu-twin"
# operator -> (published run, its archive's member): the first feasible kernel the model wrote from
# the first rung in a published run (each that operator's first feasible draft in pass order)
ARCHIVED = {
    "p1_Expm1": (PILOT_RUN, "arms/eval-rung-d0/kernels/p1_Expm1/best.cpp"),
    "p2_Cube": (PILOT_RUN, "arms/eval-rung-d1/kernels/p2_Cube/best.cpp"),
    "p3_RowMaxAbs": (PILOT_RUN, "arms/eval-rung-d2/kernels/p3_RowMaxAbs/best.cpp"),
    "p4_RowRange": (PILOT_RUN, "arms/eval-rung-d1/kernels/p4_RowRange/best.cpp"),
    "45_ReLU6": (V5, "arms/learn-value/kernels/45_ReLU6/best.cpp"),
}


def operators() -> list[Path]:
    """The pilot set, then the v5 twin curriculum, in that order."""
    curriculum = json.loads((RESULTS / V5 / "summary.json").read_text())["meta"]["curriculum"]
    return sorted(PILOT.glob("p*_*.py")) + [SUITE / f"{task}.py" for task in curriculum]


def plan_entry(k: int, seeds: list[int], drafts: int, arms: list[str] | None = None) -> dict[str, Any]:
    unknown = sorted(set(arms or ()) - set(ARMS))
    if unknown:
        raise SystemExit(f"bench.climb: no arm {', '.join(unknown)} (arms: {', '.join(ARMS)})")
    return {"bench": "climb", "backend": "npu-twin", "operators": [portable(p) for p in operators()], "k": k,
            "seeds": seeds, "drafts": drafts, "arms": list(arms or ARMS),
            "archived": {task: list(where) for task, where in ARCHIVED.items()}}


# -- stage 1: each operator's first kernel -----------------------------------------------------

def archived_kernel(task: str) -> str | None:
    if task not in ARCHIVED:
        return None
    run, member = ARCHIVED[task]
    with tarfile.open(RESULTS / run / "raw.tar.xz") as archive:
        handle = archive.extractfile(member)
        return handle.read().decode() if handle else None


def drafted_kernels(settings, out: Path, bank: Path, tasks: list[Path], drafts: int) -> dict[str, tuple[str, str]]:
    """Up to `drafts` fresh drafts from the first rung per task without a kernel: task -> (code, pass)."""
    from bench.learning.evaluation import run_draft_pass

    found: dict[str, tuple[str, str]] = {}
    for r in range(drafts):
        left = [p for p in tasks if p.stem not in found]
        run_dir = out / "first" / f"draft-d{r}"
        if not left and not run_dir.exists():
            break
        if left or run_dir.exists():
            run_draft_pass(settings, run_dir, bank, {"retrieval": "value", "shipped_rates": False}, left or tasks,
                           1000 + r, f"{out.name}-first-d{r}", start_from_rung=True)
        for attempt in _attempts(run_dir / "attempts.jsonl"):  # the source is kept in kernels/, not the record
            kept = run_dir / "kernels" / attempt["task"] / "best.cpp"
            if attempt.get("feasible") and attempt["task"] not in found and kept.is_file():
                found[attempt["task"]] = (kept.read_text(), run_dir.name)
    return found


def first_kernels(settings, out: Path, plan: dict[str, Any], bank: Path) -> dict[str, dict[str, Any]]:
    """first/<task>.json per operator: its first kernel, where it came from, its twin verdict and
    profile (or why there is none)."""
    from npu_pool.sandbox.task_loader import load_task_for
    from npu_pool.verdict import Candidate
    from npu_pool.verifier import evaluate

    folder = out / "first"
    folder.mkdir(parents=True, exist_ok=True)
    paths = [REPOSITORY / p for p in plan["operators"]]
    codes = {p.stem: (code, f"archived: {ARCHIVED[p.stem][0]}") for p in paths
             if (code := archived_kernel(p.stem)) is not None}
    todo = [p for p in paths if p.stem not in codes and not (folder / f"{p.stem}.json").is_file()]
    if todo:
        codes |= {task: (code, f"drafted: {name}") for task, (code, name) in
                  drafted_kernels(settings, out, bank, todo, plan["drafts"]).items()}
    firsts = {}
    for path in paths:
        record_path = folder / f"{path.stem}.json"
        if record_path.is_file():
            firsts[path.stem] = json.loads(record_path.read_text())
            continue
        record: dict[str, Any] = {"task": path.stem, "origin": None, "feasible": False}
        if path.stem in codes:
            code, origin = codes[path.stem]
            task = load_task_for(path, settings.harness)
            verdict, profile = evaluate(task, Candidate(source=code, format="kernel"), settings.harness)
            record.update(origin=origin, code=code, feasible=verdict.feasible and profile is not None,
                          gate=verdict.gate, reason=verdict.reason,
                          profile=profile.model_dump() if profile is not None else None)
        else:
            record["reason"] = (f"no feasible draft in {plan['drafts']} from the first rung" if plan["drafts"]
                                else "no published first kernel (drafting off: --drafts 0)")
        if record["feasible"]:
            from actors.climb import rung_of
            from npu_pool.verdict import ProfileReport

            record["rung"] = rung_of(ProfileReport.model_validate(record["profile"]))
        record_path.write_text(json.dumps(record, indent=2) + "\n")
        firsts[path.stem] = record
    return firsts


# -- stage 2: K refinements per operator, arm and seed -------------------------------------------

def refine_operator(settings, out: Path, arm: str, seed: int, path: Path, first: dict[str, Any], k: int,
                    seeded: Path) -> dict[str, Any]:
    """One operator's K refinements in one arm and seed, from its first kernel; resumable (see the module)."""
    from actors.context import trace_tags
    from actors.drafter import Drafter
    from actors.episode_factory import build_episode, run_to_end
    from actors.episode_turns import EpisodeState, PoolMember, restore
    from actors.evaluator import Evaluator
    from actors.messages import Attempt, EpisodeResult
    from actors.ports import InProcess
    from actors.refiner import Refiner
    from memory_actor.bank import MemoryBank
    from memory_actor.items import ItemVerdict, MemoryItem
    from npu_pool.backends import get_backend
    from npu_pool.verdict import ProfileReport

    runs = out / "runs" / f"{arm}-s{seed}"
    runs.mkdir(parents=True, exist_ok=True)
    result_path = runs / f"{path.stem}.json"
    if result_path.is_file():
        return json.loads(result_path.read_text())
    bank = out / "banks" / f"{arm}-s{seed}"
    before = runs / f"{path.stem}.bank-before"
    if before.exists():  # stopped midway: its arm's bank as it was before it
        shutil.rmtree(bank, ignore_errors=True)
        shutil.copytree(before, bank)
    else:
        if not bank.exists():
            shutil.copytree(seeded, bank)
        shutil.copytree(bank, before)
    attempts_path = runs / f"{path.stem}.attempts.jsonl"
    attempts_path.unlink(missing_ok=True)
    arm_settings = settings.model_copy(update={
        "memory": arm_memory(settings, ARMS[arm], bank, seed),
        # the seed's own model sampling: with one llm.seed for all, a `none` arm's seeds were replicas
        # (same prompts, same request seeds; the 2026-12-06 pilot's seed 1 until it was run again)
        "llm": settings.llm.model_copy(update={"seed": seed}),  # as bench.learning.evaluation
        # K refinements each: no stop rule ends an operator early (actors/stops.py's plateau)
        "episode": settings.episode.model_copy(update={"iterations": k + 1, "lessons": False, "start_from_rung": False,
                                                       **NO_STOPS}),
    })
    profile = ProfileReport.model_validate(first["profile"])
    run_id = f"{out.name}-{arm}-s{seed}"

    async def go() -> Any:
        memory = MemoryBank(arm_settings.memory)
        drafter, refiner = Drafter(arm_settings.llm), Refiner(arm_settings.llm)
        try:
            episode = build_episode(path, arm_settings, get_backend("npu-twin"), memory=InProcess(memory),
                                    drafter=InProcess(drafter), refiner=InProcess(refiner),
                                    evaluator=InProcess(Evaluator(arm_settings.harness)), run_id=run_id,
                                    on_attempt=lambda a: _append(attempts_path, a.model_dump(mode="json")))
            if not hasattr(episode, "pool"):  # the task did not load
                return episode
            brief = episode.brief
            trace = MemoryItem(kind="trace", backend=brief.backend, task_id=brief.task_id,
                               task_signature=brief.signature or "", stage="draft", content=first["code"],
                               summary=f"{brief.task_id} draft: feasible, {profile.median_ms:.4g} ms",
                               verdict=ItemVerdict(gate="ok", latency_ms=profile.median_ms,
                                                   speedup=profile.speedup_vs_eager),
                               run_id=run_id, tags=trace_tags(brief))
            [first_id] = memory.add([trace])
            # the episode goes on from its first kernel as from an earlier turn (actors/episode_turns.py): that
            # draft is its attempt 1, the start-point set holds it, and iterations 2..K+1 are the K refinements
            draft = Attempt(run_id=run_id, task=brief.task_id, iteration=1, stage="draft", attempt_id=first_id,
                            candidate_format="kernel", feasible=True, gate="ok", reason=f"first kernel ({first['origin']})",
                            latency_ms=profile.median_ms, speedup_vs_eager=profile.speedup_vs_eager,
                            stages=profile.stages)
            result = EpisodeResult(task=brief.task_id)
            result.record(draft)
            restore(episode, EpisodeState(
                task=brief.task_id, attempts=[draft], result=result, best_ms=profile.median_ms,
                pool=[PoolMember(id=first_id, code=first["code"], latency_ms=profile.median_ms,
                                 speedup=profile.speedup_vs_eager, profile=profile)]))
            return (await run_to_end(episode)).result
        finally:
            await drafter.aclose()
            await refiner.aclose()
            memory.close()

    print(f"[climb] {arm} seed {seed}: {path.stem}, {k} refinements", file=sys.stderr)
    ended = asyncio.run(go())
    refinements = [_refinement(a) for a in _attempts(attempts_path) if a.get("stage") == "refine"]
    feasible = [r["latency_ms"] for r in refinements if r["gate"] == "ok" and r["latency_ms"]]
    best = min([profile.median_ms, *feasible])
    result = {"task": path.stem, "arm": arm, "seed": seed, "first_ms": profile.median_ms,
              "eager_ms": profile.baseline_eager_ms, "first_rung": first.get("rung"), "best_ms": best,
              "best_over_first": profile.median_ms / best, "best_over_eager": profile.baseline_eager_ms / best,
              "refinements": refinements, "stopped_by": getattr(ended, "stopped_by", None),
              "error": getattr(ended, "error", None)}
    if result["stopped_by"] in ("infra", "error") and len(refinements) < k:
        raise RuntimeError(f"{path.stem} ({arm}, seed {seed}) stopped: {result['error']}")  # resumable, not a verdict
    result_path.write_text(json.dumps(result, indent=2) + "\n")
    shutil.rmtree(before, ignore_errors=True)
    return result


def _refinement(attempt: dict[str, Any]) -> dict[str, Any]:
    """What a refinement was shown (the rung word, or bare) and what it gave."""
    climb = [s for s in attempt.get("shown", []) if s.get("role") == "climb"]
    shown = climb[0]["id"] if climb else None
    merged = "+system" if attempt.get("proposed_by") == "system" else "+merged" if climb and climb[0].get("kind") == "merged" else ""
    word = _rung_word(shown) + merged if shown else "bare"
    return {"iteration": attempt["iteration"], "shown": word,
            "gate": attempt.get("gate"), "latency_ms": attempt.get("latency_ms"),
            "speedup_vs_eager": attempt.get("speedup_vs_eager"), "reward": attempt.get("reward"),
            "reason": (attempt.get("reason") or "")[:160]}


def _rung_word(item_id: str) -> str:
    from memory_actor.seeding import speed_rungs

    for items in speed_rungs("npu-twin").values():
        for item in items:
            if item.id == item_id:
                return item.tag_values()["rung"]
    return "rung"


def _append(path: Path, record: dict[str, Any]) -> None:
    with path.open("a") as handle:
        handle.write(json.dumps(record) + "\n")


def _attempts(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    rows = []
    for line in path.read_text().splitlines():
        try:
            rows.append(json.loads(line))
        except ValueError:
            continue
    return rows


def run(settings, out: Path, plan: dict[str, Any], model: dict[str, Any]) -> dict[str, Any]:
    from bench.learning.learning_pass import LearningBenchmark

    started_at_commit(out)
    seeded = LearningBenchmark(settings, out).seed_bank()
    firsts = first_kernels(settings, out, plan, seeded)
    climbing = [REPOSITORY / p for p in plan["operators"] if firsts[Path(p).stem]["feasible"]]
    for seed in plan["seeds"]:
        for path in climbing:
            for arm in plan["arms"]:
                refine_operator(settings, out, arm, seed, path, firsts[path.stem], plan["k"], seeded)
    return summarise(out, plan, model)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.climb", description=__doc__.splitlines()[0])
    p.add_argument("action", choices=["run", "summary", "sensitivity"])
    p.add_argument("--out", required=True, help="results folder; rerun to resume")
    p.add_argument("--k", type=int, default=6, help="refinements per operator, arm and seed")
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--drafts", type=int, default=3, help="fresh drafts from the first rung where no kernel is published")
    p.add_argument("--arms", default=",".join(ARMS), help="comma-separated, of: " + ", ".join(ARMS))
    p.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--backend", default="npu-twin", help=argparse.SUPPRESS)
    p.add_argument("--llm-base-url", default=None)
    p.add_argument("--llm-model", default=None)
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--publish", action="store_true", help="with summary: the table and raw state into bench/results/")
    p.add_argument("--costs", default="0.1,0.03,0.01,0.003,0.001",
                   help="with sensitivity: the scalar global-memory costs (us) to recompute at")
    args = p.parse_args(argv)
    out = Path(args.out).expanduser().resolve()
    if args.action == "summary":
        plan = json.loads((out / "plan.json").read_text())
        print(json.dumps(summarise(out, plan, model_meta(bench_settings(args)), args.publish)))
        return 0
    if args.action == "sensitivity":  # bench/climb_sensitivity.py: reads the folder, runs nothing
        print(json.dumps(sensitivity(out, [float(c) for c in args.costs.split(",")])))
        return 0
    settings = bench_settings(args, LOAD_PROOF)
    out.mkdir(parents=True, exist_ok=True)
    entry = plan_entry(args.k, [int(s) for s in args.seeds.split(",")], args.drafts, args.arms.split(","))
    path = out / "plan.json"
    if path.is_file() and json.loads(path.read_text()) != entry:
        raise SystemExit(f"bench.climb: {out} holds another plan ({path}); pick a new --out")
    path.write_text(json.dumps(entry, indent=2) + "\n")
    return run_resumable("climb", out, settings, lambda settings, model: run(settings, out, entry, model), (RuntimeError,))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
