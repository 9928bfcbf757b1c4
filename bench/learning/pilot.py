"""The pilot before v5 (issue 54, point 5): does a family's first rung lift this model's fresh
drafts? On operators outside every benchmark pool (`bench/learning/pilot_tasks/`: two per family
in three families whose rung maps onto them, written before any pilot draft), fresh first drafts
in two arms against the seeded bank, frozen:

- `none`: the static brief (retrieval none), the benchmark's `none` arm;
- `rung`: the same brief with the family's first rung as the worked example, renamed into the
  task's terms (`episode.start_from_rung`: what a v5 learning pass shows a curriculum operator's
  first draft), nothing else recalled.

k passes of one draft per operator and arm, arms interleaved pass by pass (the evaluation's
draft passes, bench/learning/evaluation.py: resumable, drafts the machine failed to judge drawn
again). The table is pass@1 per arm (mean over operators), per family, compile errors, and the
exact Wilcoxon test over operators. The folder is laid out as the benchmark's (plan.json,
arms/eval-<arm>-d<r>/), so a published pilot adds its rung drafts to the shipped option records
(`python -m bench.measured_rates`, docs/memory.md).

    python -m bench.learning pilot --backend npu-twin --out runs/pilot-npu-twin [--drafts 4]
    python -m bench.learning pilot --out runs/pilot-npu-twin --summary-so-far [--publish]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.learning.evaluation import FrozenBankChanged, finished, run_draft_pass
from bench.learning.plan import FAMILIES, LOAD_PROOF, PRIMARY, WIDE_ADDITIONS, Rule, plan_in
from bench.learning.publish import (
    REPOSITORY,
    git_commit,
    machine,
    note_commit,
    publish_folder,
    started_at_commit,
)
from bench.learning.resume import bench_settings, model_meta, portable, run_resumable
from bench.learning.summary import by_family as _by_family
from bench.learning.summary import compare, eval_figures, family_of

PILOT_TASKS = Path(__file__).resolve().parent / "pilot_tasks"
PILOT_ARMS: dict[str, dict[str, Any]] = {"none": {"retrieval": "none"}, "rung": {"retrieval": "value"}}


def pilot_tasks(backend: str) -> list[Path]:
    """The pilot's operators, each checked: outside every benchmark pool, and with its family's
    first rung mapping onto its signature on `backend` (else the `rung` arm would show nothing)."""
    from actors.briefing import task_brief
    from npu_pool.backends import get_backend
    from npu_pool.tasks.spec import load_task

    pool = {stem for families in (FAMILIES, WIDE_ADDITIONS) for stems in families.values() for stem in stems}
    tasks = sorted(PILOT_TASKS.glob("p*_*.py"))
    for path in tasks:
        brief = task_brief(load_task(path, max_bytes=1 << 20), get_backend(backend), "kernel")
        if path.stem in pool or brief.rung is None:
            raise SystemExit(f"bench.learning pilot: {path.name} is in a benchmark pool or has no rung on {backend}")
    return tasks


def plan_entry(backend: str, drafts: int, seed: int) -> dict[str, Any]:
    """What plan.json records: the benchmark's plan layout (bench.learning.plan.recorded), so the
    folder reads like one of its results (`plan_in`, bench.measured_rates)."""
    tasks = pilot_tasks(backend)
    return {"design": "pilot", "backend": backend, "suite": portable(PILOT_TASKS), "pool": [p.stem for p in tasks],
            "arms": list(PILOT_ARMS), "rule": Rule().__dict__, "eval_drafts": drafts, "iterations": 1, "seed": seed}


def run_pilot(settings, out: Path, plan: dict[str, Any], model: dict[str, Any]) -> dict[str, Any]:
    from bench.learning.learning_pass import LearningBenchmark

    started_at_commit(out)
    bank = LearningBenchmark(settings, out).seed_bank()
    tasks = plan["pool"]
    for r in range(plan["eval_drafts"]):
        for arm, memory in PILOT_ARMS.items():
            run_dir = out / "arms" / f"eval-{arm}-d{r}"
            if not finished(run_dir):
                note_commit(run_dir, "resumed" if (run_dir / "summary.json").is_file() else "started")
            run_draft_pass(settings, run_dir, bank, memory, tasks, plan["seed"] + 100 + r, f"{out.name}-{arm}-d{r}",
                           start_from_rung=arm == "rung")
    return summarise(out, plan, model)


def summarise(out: Path, plan: dict[str, Any], model: dict[str, Any], publish: bool = False) -> dict[str, Any]:
    """summary.json/.md of the pilot folder (bench/results/<date>-<model>-pilot-<backend>/ with
    its raw state when `publish` and complete); its headline."""
    operators = [p.stem for p in plan["pool"]]
    families = {p.stem: family_of(p) for p in plan["pool"]}
    passes = {arm: [out / "arms" / f"eval-{arm}-d{r}" for r in range(plan["eval_drafts"])] for arm in plan["arms"]}
    figures = {arm: eval_figures(arm, dirs, operators) for arm, dirs in passes.items()}
    by_family = {arm: _by_family(f, families) for arm, f in figures.items()}
    test = compare(figures["rung"], figures["none"])
    complete = all(finished(d) for dirs in passes.values() for d in dirs)
    meta = {"date": datetime.now(UTC).isoformat(timespec="seconds"), "git_commit": started_at_commit(out),
            "summarised_at_commit": git_commit(), "machine": machine(), "model": model, "backend": plan["backend"],
            "design": "pilot", "results": str(out), "operators": operators, "families": families,
            "eval_drafts": plan["eval_drafts"], "complete": complete}
    headline = {"bench": "learning", "design": "pilot", "backend": plan["backend"],
                **{f"pass1_{arm}": f["pass1"] for arm, f in figures.items()},
                **{f"compile_errors_{arm}": f["compile_errors"] for arm, f in figures.items()},
                "difference_rung_vs_none": test["mean_difference"], "p_value_rung_vs_none": test["p_wilcoxon"]}
    summary = {"meta": meta, "evaluation": list(figures.values()), "by_family": by_family,
               "tests": {"rung_vs_none": test}, "headline": headline}
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    (out / "summary.md").write_text(render(meta, figures, by_family, test))
    if publish:
        _publish(out, plan, meta)
    return {**headline, "complete": complete, "results": str(out)}


def render(meta: dict[str, Any], figures: dict[str, Any], by_family: dict[str, Any], test: dict[str, Any]) -> str:
    arms = list(figures)
    lines = [f"# EvoKernel pilot: first rungs against the bare brief ({meta['backend']})", "",
             f"- date: {meta['date']}; git commit: {meta['git_commit']}; complete: {meta['complete']}",
             f"- model: {meta['model'].get('name')} ({meta['model'].get('endpoint')})",
             f"- operators (outside every benchmark pool): {', '.join(meta['operators'])}; "
             f"{meta['eval_drafts']} fresh drafts per operator and arm", "",
             "| arm | drafts | pass@1 (mean over operators) | compile errors | " + " | ".join(sorted(
                 {f for arm in arms for f in by_family[arm]})) + " |", "|---" * (4 + len(by_family[arms[0]])) + "|"]
    for arm in arms:
        f = figures[arm]
        cells = " | ".join(f"{s}/{n}" for s, n in by_family[arm].values())
        pass1 = "—" if f["pass1"] is None else f"{f['pass1']:.1%}"
        lines.append(f"| {arm} | {f['drafts']} | {pass1} | {f['compile_errors']} | {cells} |")
    diff = "—" if test["mean_difference"] is None else f"{test['mean_difference']:+.2f}"
    lines += ["", f"rung vs none over {test['operators']} operators: wins / losses / ties {test['wins']} / "
              f"{test['losses']} / {test['ties']}, mean difference {diff}, p (Wilcoxon, exact) {test['p_wilcoxon']}", ""]
    return "\n".join(lines)


def _publish(out: Path, plan: dict[str, Any], meta: dict[str, Any]) -> None:
    from bench.learning.archive import pack
    from bench.learning.checkpoint import drop_checkpoints

    results = REPOSITORY / "bench" / "results"
    name = f"{meta['date'][:10]}-{str(meta['model'].get('name')).replace('/', '_')}-pilot-{plan['backend']}"
    if not meta["complete"]:
        raise SystemExit(f"bench.learning pilot: {out} is not complete; a pilot is published whole")
    target = publish_folder(results, name, out)
    target.mkdir(parents=True, exist_ok=True)
    for file in ("summary.md", "summary.json"):
        shutil.copyfile(out / file, target / file)
    pack(out, target, portable(out))
    drop_checkpoints(results, out, "pilot", plan["backend"])  # the whole pilot supersedes its checkpoints
    print(f"[learning] pilot published: {target}", file=sys.stderr)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.learning pilot", description=__doc__.splitlines()[0])
    p.add_argument("--backend", choices=sorted(PRIMARY), default="cpu")
    p.add_argument("--design", choices=["v5", "v6"], default="v5", help="v5: the first rungs' pilot (published); "
                   "v6: the new shapes' rungs and the operator's own C kernel (bench/learning/pilot_v6.py)")
    p.add_argument("--out", required=True, help="results folder; rerun to resume")
    p.add_argument("--drafts", type=int, default=4, help="fresh drafts per operator and arm")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--llm-base-url", default=None)
    p.add_argument("--llm-model", default=None)
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--summary-so-far", action="store_true", help="run nothing: the table of what --out holds")
    p.add_argument("--publish", action="store_true", help="with --summary-so-far: the table and raw state into "
                   "bench/results/ (a complete pilot only)")
    args = p.parse_args(argv)
    out = Path(args.out).expanduser().resolve()
    if args.summary_so_far:
        plan = plan_in(out)
        args.backend = plan["backend"]
        if plan["design"] == "pilot-v6":
            from bench.learning.pilot_v6 import summarise_v6

            print(json.dumps(summarise_v6(out, plan, model_meta(bench_settings(args)), args.publish)))
            return 0
        print(json.dumps(summarise(out, plan, model_meta(bench_settings(args)), args.publish)))
        return 0
    if args.drafts < 1:
        raise SystemExit("bench.learning pilot: --drafts >= 1")
    settings = bench_settings(args, LOAD_PROOF)  # v4's and v5's limits: a busy machine is no verdict
    out.mkdir(parents=True, exist_ok=True)
    if args.design == "v6":
        from bench.learning.pilot_v6 import plan_entry_v6

        entry = plan_entry_v6(args.backend, args.drafts, args.seed)
    else:
        entry = plan_entry(args.backend, args.drafts, args.seed)
    path = out / "plan.json"
    if path.is_file() and json.loads(path.read_text()) != entry:
        raise SystemExit(f"bench.learning pilot: {out} holds another plan ({path}); pick a new --out")
    path.write_text(json.dumps(entry, indent=2) + "\n")
    plan = plan_in(out)
    if plan["design"] == "pilot-v6":
        from bench.learning.pilot_v6 import run_pilot_v6

        return run_resumable("pilot", out, settings, lambda settings, model: run_pilot_v6(settings, out, plan, model),
                             (FrozenBankChanged,))
    return run_resumable("pilot", out, settings, lambda settings, model: run_pilot(settings, out, plan, model),
                         (FrozenBankChanged,))
