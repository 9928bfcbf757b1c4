"""The pilot before v6 (issue 64, point 7): do the ladder's new shapes and the operator's own C
kernel lift this model's fresh drafts? On operators outside every benchmark pool
(`bench/learning/pilot_tasks_v6/`: one or two per shape the new first rungs reach, written before
any pilot draft; docs/learning_benchmark.md, "The pilot before v6"), fresh first drafts, frozen:

- `none`: the static brief (retrieval none), the benchmark's `none` arm (the brief of issue 64.1);
- `rung`: the same brief with the family's first rung of the task's shape as the worked example,
  renamed into the task's terms, nothing else recalled (`episode.start_from_rung`);
- `own_c` (Ascend C only): first a C draft of the operator (the cpu backend, from its C rung:
  counted as an attempt), then the Ascend C draft shown that C kernel when it passed
  (`episode.start_from=own_kernel_other_backend,rung`: the operator's own verified C kernel,
  else the rung). Its pass@1 is reported per Ascend C draft and per attempt (C drafts counted).

k passes of one draft per operator and arm, arms interleaved pass by pass, resumable (each pass a
campaign folder under arms/; the C drafts under arms/c-draft-d<r>/, each pass's bank with its C
kernels under banks/own-c-d<r>/). The folder is laid out as the v5 pilot's (bench/learning/pilot.py).

    python -m bench.learning pilot --design v6 --backend npu-twin --out runs/pilot-v6-npu-twin [--drafts 4]
    python -m bench.learning pilot --design v6 --out runs/pilot-v6-npu-twin --summary-so-far [--publish]
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from bench.learning.evaluation import finished, run_draft_pass
from bench.learning.plan import FAMILIES, WIDE_ADDITIONS
from bench.learning.publish import note_commit, started_at_commit

PILOT_TASKS_V6 = Path(__file__).resolve().parent / "pilot_tasks_v6"
ARMS_V6 = {"cpu": ("none", "rung"), "npu-twin": ("none", "rung", "own_c")}
OWN_C_START = "own_kernel_other_backend,rung"


def pilot_v6_tasks(backend: str) -> list[Path]:
    """The v6 pilot's operators, each checked: outside every benchmark pool and every suite, and
    with a first rung of its shape on `backend` (else the `rung` arm would show nothing)."""
    from actors.briefing import task_brief
    from npu_pool.backends import get_backend
    from npu_pool.tasks.spec import load_task

    pool = {stem for families in (FAMILIES, WIDE_ADDITIONS) for stems in families.values() for stem in stems}
    tasks = sorted(PILOT_TASKS_V6.glob("q*_*.py"))
    for path in tasks:
        brief = task_brief(load_task(path, max_bytes=1 << 22), get_backend(backend), "kernel")
        if path.stem in pool or brief.rung is None:
            raise SystemExit(f"bench.learning pilot: {path.name} is in a benchmark pool or has no rung on {backend}")
    return tasks


def plan_entry_v6(backend: str, drafts: int, seed: int) -> dict[str, Any]:
    from bench.learning.plan import Rule
    from bench.learning.resume import portable

    tasks = pilot_v6_tasks(backend)
    return {"design": "pilot-v6", "backend": backend, "suite": portable(PILOT_TASKS_V6),
            "pool": [p.stem for p in tasks], "arms": list(ARMS_V6[backend]), "rule": Rule().__dict__,
            "eval_drafts": drafts, "iterations": 1, "seed": seed}


def run_pilot_v6(settings, out: Path, plan: dict[str, Any], model: dict[str, Any]) -> dict[str, Any]:
    from bench.learning.learning_pass import LearningBenchmark

    started_at_commit(out)
    bank = LearningBenchmark(settings, out).seed_bank()
    tasks = plan["pool"]
    for r in range(plan["eval_drafts"]):
        seed = plan["seed"] + 100 + r
        for arm in plan["arms"]:
            run_dir = out / "arms" / f"eval-{arm}-d{r}"
            if not finished(run_dir):
                note_commit(run_dir, "resumed" if (run_dir / "summary.json").is_file() else "started")
            if arm == "none":
                run_draft_pass(settings, run_dir, bank, {"retrieval": "none"}, tasks, seed, f"{out.name}-{arm}-d{r}")
            elif arm == "rung":
                run_draft_pass(settings, run_dir, bank, {"retrieval": "value"}, tasks, seed, f"{out.name}-{arm}-d{r}",
                               start_from_rung=True)
            else:
                own_bank = _with_own_c_kernels(settings, out, bank, tasks, r, seed)
                shown = settings.model_copy(update={"episode": settings.episode.model_copy(update={
                    "start_from": OWN_C_START, "cross_backend_kernels": True})})
                run_draft_pass(shown, run_dir, own_bank, {"retrieval": "value"}, tasks, seed, f"{out.name}-{arm}-d{r}")
    return summarise_v6(out, plan, model)


def c_settings(settings):
    """The same benchmark settings on the cpu backend (its C kernel format)."""
    return settings.model_copy(update={"harness": settings.harness.model_copy(update={"backend": "cpu"})})


def _with_own_c_kernels(settings, out: Path, twin_bank: Path, tasks: list[Path], r: int, seed: int) -> Path:
    """Pass r's C drafts (one per operator, from its C rung; resumable), then a copy of the seeded
    Ascend C bank holding each feasible one as a verified C trace of its operator. Made once."""
    from bench.learning.learning_pass import LearningBenchmark

    cpu = c_settings(settings)
    c_dir = out / "arms" / f"c-draft-d{r}"
    run_draft_pass(cpu, c_dir, LearningBenchmark(cpu, out / "c").seed_bank(), {"retrieval": "value"}, tasks, seed,
                   f"{out.name}-c-draft-d{r}", start_from_rung=True)
    target, done = out / "banks" / f"own-c-d{r}", out / "banks" / f"own-c-d{r}.done"
    if done.exists() and target.exists():
        return target
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(twin_bank, target)
    kernels = own_c_kernels(c_dir, tasks)
    _add_c_traces(settings, target, kernels)
    done.write_text(json.dumps(sorted(kernels)) + "\n")
    return target


def own_c_kernels(c_dir: Path, tasks: list[Path]) -> dict[str, tuple[str, float | None, str]]:
    """task -> (its feasible C kernel's code, latency, signature) from a C draft pass's folder."""
    from actors.briefing import task_brief
    from npu_pool.backends import get_backend
    from npu_pool.tasks.spec import load_task

    paths = {p.stem: p for p in tasks}
    found = {}
    for line in (c_dir / "attempts.jsonl").read_text().splitlines() if (c_dir / "attempts.jsonl").exists() else []:
        row = json.loads(line)
        code = c_dir / "kernels" / row["task"] / "best.cpp"
        if row.get("feasible") and code.is_file() and row["task"] in paths:
            brief = task_brief(load_task(paths[row["task"]], max_bytes=1 << 22), get_backend("cpu"), "kernel")
            found[row["task"]] = (code.read_text(), row.get("latency_ms"), brief.signature or "")
    return found


def _add_c_traces(settings, bank_path: Path, kernels: dict[str, tuple[str, float | None, str]]) -> None:
    from memory_actor.bank import MemoryBank
    from memory_actor.items import ItemVerdict, MemoryItem

    bank = MemoryBank(settings.memory.model_copy(update={"uri": str(bank_path)}))
    try:
        bank.add([MemoryItem(kind="trace", backend="cpu", task_id=task, stage="draft", content=code,
                             task_signature=signature, verdict=ItemVerdict(gate="ok", latency_ms=latency),
                             summary=f"{task}: the model's own C kernel, verified on the cpu backend",
                             tags=["own_c"]) for task, (code, latency, signature) in sorted(kernels.items())])
    finally:
        bank.close()


def summarise_v6(out: Path, plan: dict[str, Any], model: dict[str, Any], publish: bool = False) -> dict[str, Any]:
    """summary.json/.md of a v6 pilot folder: the v5 pilot's table per arm, distinct feasible
    kernels per operator and arm, and for `own_c` the pass@1 per attempt with its C drafts
    counted (each Ascend C draft of the arm cost one C draft too); its headline."""
    from datetime import UTC, datetime

    from bench.learning.publish import git_commit, machine
    from bench.learning.summary import by_family as _by_family
    from bench.learning.summary import compare, distinct_kernels, eval_figures, family_of

    operators = [p.stem for p in plan["pool"]]
    families = {p.stem: family_of(p) for p in plan["pool"]}
    passes = {arm: [out / "arms" / f"eval-{arm}-d{r}" for r in range(plan["eval_drafts"])] for arm in plan["arms"]}
    c_passes = [out / "arms" / f"c-draft-d{r}" for r in range(plan["eval_drafts"])]
    figures = {arm: eval_figures(arm, dirs, operators) for arm, dirs in passes.items()}
    distinct = {arm: distinct_kernels(dirs) for arm, dirs in passes.items()}
    tests = {"rung_vs_none": compare(figures["rung"], figures["none"])}
    headline: dict[str, Any] = {"bench": "learning", "design": "pilot-v6", "backend": plan["backend"],
                                **{f"pass1_{arm}": f["pass1"] for arm, f in figures.items()},
                                **{f"compile_errors_{arm}": f["compile_errors"] for arm, f in figures.items()},
                                "difference_rung_vs_none": tests["rung_vs_none"]["mean_difference"],
                                "p_value_rung_vs_none": tests["rung_vs_none"]["p_wilcoxon"]}
    own_c: dict[str, Any] = {}
    if "own_c" in figures:
        tests["own_c_vs_rung"] = compare(figures["own_c"], figures["rung"])
        c_figures = eval_figures("c-draft", c_passes, operators)
        attempts = figures["own_c"]["drafts"] + c_figures["drafts"]
        own_c = {"c_drafts": c_figures["drafts"], "c_feasible": c_figures["feasible_drafts"],
                 "pass1_per_draft": figures["own_c"]["pass1"],
                 "feasible_per_attempt": round(figures["own_c"]["feasible_drafts"] / attempts, 4) if attempts else None,
                 # what the rung arm reaches with the same two attempts an operator: at least one of two drafts
                 "rung_two_drafts": None if figures["rung"]["pass1"] is None else round(
                     sum(1 - (1 - p) ** 2 for p in figures["rung"]["pass1_by_operator"].values())
                     / max(len(figures["rung"]["pass1_by_operator"]), 1), 4)}
        headline.update({"own_c_feasible_per_attempt": own_c["feasible_per_attempt"],
                         "difference_own_c_vs_rung": tests["own_c_vs_rung"]["mean_difference"]})
    complete = all(finished(d) for dirs in passes.values() for d in dirs)
    meta = {"date": datetime.now(UTC).isoformat(timespec="seconds"), "git_commit": started_at_commit(out),
            "summarised_at_commit": git_commit(), "machine": machine(), "model": model, "backend": plan["backend"],
            "design": "pilot-v6", "results": str(out), "operators": operators, "families": families,
            "eval_drafts": plan["eval_drafts"], "complete": complete}
    summary = {"meta": meta, "evaluation": list(figures.values()), "by_family": {a: _by_family(f, families)
                                                                                for a, f in figures.items()},
               "distinct_feasible_kernels": distinct, "own_c": own_c, "tests": tests, "headline": headline}
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    (out / "summary.md").write_text(render_v6(meta, figures, distinct, own_c, tests))
    if publish:
        _publish_v6(out, plan, meta)
    return {**headline, "complete": complete, "results": str(out)}


def render_v6(meta: dict[str, Any], figures: dict[str, Any], distinct: dict[str, dict[str, int]],
              own_c: dict[str, Any], tests: dict[str, Any]) -> str:
    lines = [f"# EvoKernel pilot before v6: new rungs and the operator's own C kernel ({meta['backend']})", "",
             f"- date: {meta['date']}; git commit: {meta['git_commit']}; complete: {meta['complete']}",
             f"- model: {meta['model'].get('name')}; operators (outside every benchmark pool): "
             f"{', '.join(meta['operators'])}; {meta['eval_drafts']} fresh drafts per operator and arm", "",
             "| arm | drafts | pass@1 (mean over operators) | feasible drafts | distinct feasible kernels | compile errors |",
             "|---|---|---|---|---|---|"]
    for arm, f in figures.items():
        pass1 = "—" if f["pass1"] is None else f"{f['pass1']:.1%}"
        lines.append(f"| {arm} | {f['drafts']} | {pass1} | {f['feasible_drafts']} | {sum(distinct[arm].values())} | "
                     f"{f['compile_errors']} |")
    lines.append("")
    for name, test in tests.items():
        diff = "—" if test["mean_difference"] is None else f"{test['mean_difference']:+.2f}"
        lines.append(f"- {name.replace('_vs_', ' vs ')}: wins / losses / ties {test['wins']} / {test['losses']} / "
                     f"{test['ties']}, mean difference {diff}, p (Wilcoxon, exact) {test['p_wilcoxon']}")
    if own_c:
        lines.append(f"- own_c's cost: {own_c['c_drafts']} C drafts ({own_c['c_feasible']} feasible) beside its Ascend C "
                     f"drafts; feasible Ascend C kernels per attempt (C drafts counted) {own_c['feasible_per_attempt']}, "
                     f"against the rung's chance in two drafts {own_c['rung_two_drafts']}")
    return "\n".join(lines) + "\n"


def _publish_v6(out: Path, plan: dict[str, Any], meta: dict[str, Any]) -> None:
    import sys

    from bench.learning.archive import publish_table

    if not meta["complete"]:
        raise SystemExit(f"bench.learning pilot: {out} is not complete; a pilot is published whole")
    target = publish_table(out, meta, f"pilot-v6-{plan['backend']}")
    print(f"[learning] pilot published: {target}", file=sys.stderr)
