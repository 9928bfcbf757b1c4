"""The learning benchmark's summary: pass@1 of the evaluation per arm and operator, the
pre-registered paired test, the learning pass's fast_0, summary.md/.json (and their copy in
bench/results/ with --publish). `tables` computes every published figure from a results folder
alone, so a published run's tables are re-derived from its archive (bench/learning/archive.py).

pass@1 of an operator in an arm is the share of its fresh drafts (one per evaluation pass) that
were feasible. Arms are compared over the held-out operators that every compared arm drafted:
the exact two-sided Wilcoxon signed-rank test of the per-operator differences (zeros dropped,
tied |differences| sharing their average rank; bench/learning/stats.py), a 95% percentile
bootstrap over operators for the mean difference and each arm's mean pass@1, and a Wilson
interval of the pooled drafts beside it (optimistic: drafts of one operator are not independent
trials of the arm).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from statistics import median
from typing import Any

from bench.learning.archive import pack, unpack
from bench.learning.evaluation import draft_outcomes, finished, gate_counts
from bench.learning.plan import DESIGNS, TARGETS, plan_in
from bench.learning.publish import (
    REPOSITORY,
    drop_interim_publication,
    git_commit,
    machine,
    publish_folder,
    started_at_commit,
)
from bench.learning.resume import portable
from bench.learning.stats import (
    attempts_to_first_feasible,
    bootstrap_mean,
    fast_0_curve,
    paired,
    score,
    wilson,
)
from launch.report import RunReport

ALPHA = 0.05
PAIRS = [("value", "similarity"), ("value", "none"), ("similarity", "none")]


def pass1_by_operator(passes: list[Path], heldout: list[str]) -> tuple[dict[str, float], dict[str, int]]:
    """Per held-out operator: pass@1 over the finished evaluation passes, and its draft count."""
    wins: dict[str, int] = {}
    drafts: dict[str, int] = {}
    for run_dir in passes:
        if not (run_dir / "summary.json").is_file():
            continue
        for task, feasible in draft_outcomes(run_dir).items():
            if task in heldout:
                drafts[task] = drafts.get(task, 0) + 1
                wins[task] = wins.get(task, 0) + int(feasible)
    return {task: round(wins[task] / drafts[task], 4) for task in drafts}, drafts


def distinct_kernels(passes: list[Path]) -> dict[str, int]:
    """task -> how many different feasible kernels its passes wrote (issue 64.5: v5's 7_Sigmoid
    passed 5 times with 3 distinct files): each pass keeps its operator's feasible kernel in
    kernels/<task>/best.*; equal text is one kernel."""
    found: dict[str, set[str]] = {}
    for run_dir in passes:
        for best in (run_dir / "kernels").glob("*/best.*"):
            found.setdefault(best.parent.name, set()).add(best.read_text().strip())
    return {task: len(texts) for task, texts in sorted(found.items())}


def seeded_drafts(passes: list[Path]) -> int:
    """How many drafts of the passes recorded their sampling seed (attempts.jsonl `sampling_seed`)."""
    count = 0
    for run_dir in passes:
        path = run_dir / "attempts.jsonl"
        if path.is_file():
            count += sum(1 for line in path.read_text().splitlines()
                         if line.strip() and json.loads(line).get("sampling_seed") is not None)
    return count


def shown_own_kernels(passes: list[Path], heldout: list[str]) -> dict[str, Any]:
    """Issue 64.3: the drafts whose prompt showed a kernel the model wrote (a banked trace, not a
    rung or an example of the ladder), how many passed, and in which place each was shown (`role`:
    the worked example, a ranked context item)."""
    drafts = feasible = 0
    roles: dict[str, int] = {}
    for run_dir in passes:
        path = run_dir / "attempts.jsonl"
        for line in path.read_text().splitlines() if path.is_file() else []:
            attempt = json.loads(line) if line.strip() else {}
            own = [item for item in attempt.get("shown") or [] if item.get("kind") == "trace"]
            if attempt.get("task") not in heldout or not own:
                continue
            drafts += 1
            feasible += bool(attempt.get("feasible"))
            for item in own:
                roles[item.get("role") or "?"] = roles.get(item.get("role") or "?", 0) + 1
    return {"drafts": drafts, "feasible": feasible, "by_role": dict(sorted(roles.items()))}


def eval_figures(arm: str, passes: list[Path], heldout: list[str]) -> dict[str, Any]:
    rates, drafts = pass1_by_operator(passes, heldout)
    gates: dict[str, int] = {}
    for run_dir in passes:
        for gate, count in gate_counts(run_dir).items():
            gates[gate] = gates.get(gate, 0) + count
    total = sum(drafts.values())
    feasible = round(sum(rates[t] * drafts[t] for t in rates))
    values = list(rates.values())
    return {
        "arm": arm, "operators": len(rates), "drafts": total, "feasible_drafts": feasible,
        "pass1": round(sum(values) / len(values), 4) if values else None,
        "pass1_ci95_bootstrap": bootstrap_mean(values), "pass1_pooled_ci95_wilson": list(wilson(feasible, total)),
        "compile_errors": gates.get("compile", 0), "gates": dict(sorted(gates.items(), key=lambda kv: -kv[1])),
        "pass1_by_operator": rates, "drafts_by_operator": drafts,
    }


def compare(treated: dict[str, Any], baseline: dict[str, Any]) -> dict[str, Any]:
    test = paired(treated["pass1_by_operator"], baseline["pass1_by_operator"])
    common = sorted(set(treated["pass1_by_operator"]) & set(baseline["pass1_by_operator"]))
    diffs = [treated["pass1_by_operator"][t] - baseline["pass1_by_operator"][t] for t in common]
    return {**test, "mean_difference_ci95_bootstrap": bootstrap_mean(diffs)}


def evaluate(domain: str, evaluation: dict[str, dict[str, Any]],
             design: str = "v3") -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """The paired tests between the arms present, and the verdict on the design's primary
    hypothesis (plan.TARGETS): v3, the difference at least the target and significant; v4, at
    least the target (significant only where the target says so) and compile errors treated <= none."""
    tests = {f"{a}_vs_{b}": compare(evaluation[a], evaluation[b]) for a, b in PAIRS
             if a in evaluation and b in evaluation}
    target = TARGETS[design, domain]
    name = target.name
    verdict: dict[str, Any] = {"primary": name, "alpha": ALPHA, "target_points": target.points}
    if design != "v3":
        verdict["target_needs_p"] = target.needs_p
    if name in tests and tests[name]["mean_difference"] is not None:
        test = tests[name]
        verdict["difference"] = test["mean_difference"]
        verdict["significant"] = test["p_wilcoxon"] < ALPHA and test["mean_difference"] > 0
        met = test["mean_difference"] >= target.points - 1e-9 and (verdict["significant"] or not target.needs_p)
        if "none" in evaluation and target.treated in evaluation:
            verdict["compile_errors_treated_le_none"] = (evaluation[target.treated]["compile_errors"]
                                                         <= evaluation["none"]["compile_errors"]
                                                         + target.compile_error_allowance)
            met = met and (verdict["compile_errors_treated_le_none"] or not target.compile_errors)
        verdict["target_met"] = met if design != "v3" else verdict["significant"] and met
    return tests, verdict


def _wall_s(report: RunReport) -> float | None:
    if not (report.started_at and report.finished_at):
        return None
    started, ended = datetime.fromisoformat(report.started_at), datetime.fromisoformat(report.finished_at)
    return round((ended - started).total_seconds(), 1)


def arm_figures(arm: str, report: RunReport, iterations: int) -> dict[str, Any]:
    """An arm's learning pass: fast_0 by iteration (a 95% Wilson interval), attempts to the first
    feasible kernel, failures by gate, the speedup of the best kernel over the first feasible
    one. The fields of the retired v2 design's per-arm table, of one replicate."""
    rows = report.operators
    firsts = [row.first_feasible_iteration for row in rows]
    curve = fast_0_curve(firsts, iterations)
    failures: dict[str, int] = {}
    for row in rows:
        for gate, count in row.failures.items():
            failures[gate] = failures.get(gate, 0) + count
    failures = dict(sorted(failures.items(), key=lambda kv: (-kv[1], kv[0])))
    gains = sorted(row.speedup_best_over_first for row in rows if row.speedup_best_over_first)
    wall = _wall_s(report)
    return {
        "arm": arm, "retrieval": report.retrieval, "replicates": 1, "operators": len({row.task for row in rows}),
        "attempts": report.attempts, "feasible_attempts": report.attempts - sum(failures.values()),
        "failures_by_gate": failures, "compile_errors": failures.get("compile", 0),
        "fast_0_final": curve[-1]["fast_0"] if curve else None,
        "fast_0_final_ci95": curve[-1]["ci95"] if curve else None,
        "fast_0_by_iteration": [point["fast_0"] for point in curve],
        "fast_0_ci95_by_iteration": [point["ci95"] for point in curve],
        "fast_0_level2": None,  # v2's transfer figure: no level-2 operators in this design
        "attempts_to_first_feasible": attempts_to_first_feasible(firsts),
        "median_speedup_best_over_first": median(gains) if gains else None, "speedups_counted": len(gains),
        "score_by_operator": {row.task: float(score(row.first_feasible_iteration, iterations)) for row in rows},
        "tokens": report.tokens, "wall_s": wall if wall is not None else 0, "finished": report.finished_at is not None,
        "per_replicate": [{
            "replicate": 0, "seed": None, "run_dir": report.run_dir,
            "first_feasible": {row.task: row.first_feasible_iteration for row in rows},
            "feasible_operators": report.feasible_operators, "attempts": report.attempts, "problems": report.problems,
        }],
    }


def learning_figures(out: Path, arms: list[str], iterations: int) -> dict[str, dict[str, Any]]:
    from launch.report import analyse_run

    return {arm: arm_figures(arm, analyse_run(out / "arms" / f"learn-{arm}"), iterations) for arm in arms
            if (out / "arms" / f"learn-{arm}" / "summary.json").is_file()}


def tables(out: Path, plan: dict[str, Any], screening: dict[str, Any]) -> dict[str, Any]:
    """Every figure of summary.json computed from the results folder `out` alone: the learning
    pass per arm, the evaluation per arm, the paired tests, the verdict and the headline."""
    learning = learning_figures(out, plan["arms"], plan["iterations"])
    evaluation = {arm: eval_figures(arm, [out / "arms" / f"eval-{arm}-d{r}" for r in range(plan["eval_drafts"])],
                                    screening["heldout"]) for arm in plan["arms"]}
    design = plan.get("design", "v3")
    if design not in ("v3", "v4", "v5"):  # issue 64.5, from v6: distinct kernels and the draws' seeds
        for arm, figures in evaluation.items():
            passes = [out / "arms" / f"eval-{arm}-d{r}" for r in range(plan["eval_drafts"])]
            distinct = {task: n for task, n in distinct_kernels(passes).items() if task in screening["heldout"]}
            figures.update({"distinct_feasible_kernels": sum(distinct.values()), "distinct_by_operator": distinct,
                            "drafts_with_seed": seeded_drafts(passes),
                            "shown_own_kernels": shown_own_kernels(passes, screening["heldout"])})
    tests, verdict = evaluate(plan["backend"], evaluation, design)
    return {"learning": learning, "evaluation": evaluation, "tests": tests, "verdict": verdict,
            "headline": headline(plan["backend"], learning, evaluation, tests, verdict, design)}


def summarise(out: Path, plan: dict[str, Any], model: dict[str, Any], publish: bool) -> dict[str, Any]:
    """summary.json/.md of the folder (copied to bench/results/ when `publish`); the headline."""
    screening_path = out / "screening.json"
    if not screening_path.is_file():
        raise SystemExit(f"bench.learning: {out} has no finished screening yet")
    screening = json.loads(screening_path.read_text())
    if screening.get("stopped"):
        raise SystemExit(f"bench.learning: {out} stopped at screening ({screening['stopped']}): no learning or "
                         "evaluation to summarise; screening.json holds every outcome")
    figures = tables(out, plan, screening)
    planned = [f"learn-{a}" for a in plan["arms"]] + [f"eval-{a}-d{r}" for r in range(plan["eval_drafts"])
                                                      for a in plan["arms"]]
    meta = {"date": datetime.now(UTC).isoformat(timespec="seconds"), "git_commit": started_at_commit(out),
            "summarised_at_commit": git_commit(), "machine": machine(), "model": model, "backend": plan["backend"],
            "design": plan.get("design", "v3"), "results": str(out), "screening": screening, "heldout": screening["heldout"],
            "curriculum": screening["curriculum"], "iterations": plan["iterations"], "eval_drafts": plan["eval_drafts"],
            "complete": all(finished(out / "arms" / name) for name in planned),
            "pending": [name for name in planned if not finished(out / "arms" / name)]}
    learning, evaluation, tests, verdict, line = (figures[k] for k in ("learning", "evaluation", "tests", "verdict",
                                                                        "headline"))
    summary = {"meta": meta, "learning": list(learning.values()), "evaluation": list(evaluation.values()),
               "tests": tests, "verdict": verdict, "headline": line}
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    (out / "summary.md").write_text(render(meta, learning, evaluation, tests, verdict, line))
    if publish:
        results = REPOSITORY / "bench" / "results"
        name = f"{meta['date'][:10]}-{str(model.get('name')).replace('/', '_')}-{meta['design']}-{plan['backend']}"
        target = publish_folder(results, name + ("" if meta["complete"] else "-interim"), out)
        target.mkdir(parents=True, exist_ok=True)
        for file in ("summary.md", "summary.json"):
            shutil.copyfile(out / file, target / file)
        if meta["complete"]:  # the raw state beside the final table (raw.tar.xz, raw.json)
            from bench.learning.checkpoint import drop_checkpoints

            drop_interim_publication(results, out)
            drop_checkpoints(results, out, meta["design"], plan["backend"])
            pack(out, target, portable(out))
    print(f"[learning] results: {out} (summary.md, summary.json)", file=sys.stderr)
    return {**line, "results": str(out)}


def headline(domain: str, learning: dict[str, Any], evaluation: dict[str, Any], tests: dict[str, Any],
             verdict: dict[str, Any], design: str = "v3") -> dict[str, Any]:
    """The v2 keys (fast_0_<arm> and speedup_best_over_first_<arm> of the learning pass,
    p_value_<a>_vs_<b>) plus pass1_<arm>; p-values are the evaluation pass's pass@1 tests."""
    line: dict[str, Any] = {"bench": "learning", "design": design, "backend": domain}
    line.update({f"fast_0_{arm}": f["fast_0_final"] for arm, f in learning.items()})
    line.update({f"speedup_best_over_first_{arm}": f["median_speedup_best_over_first"] for arm, f in learning.items()})
    line.update({f"pass1_{arm}": f["pass1"] for arm, f in evaluation.items()})
    line.update({f"p_value_{name}": test["p_wilcoxon"] for name, test in tests.items()})
    line["primary"] = verdict["primary"]
    line["target_met"] = verdict.get("target_met")
    return line


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:.0%}"


def _p4(value: float | None) -> str:
    return "—" if value is None else f"{value:.4f}"


def _ci(interval: list[float] | tuple[float, float] | None) -> str:
    return "" if not interval else f" [{interval[0]:.0%}, {interval[1]:.0%}]"


def render(meta: dict[str, Any], learning: dict[str, Any], evaluation: dict[str, Any], tests: dict[str, Any],
           verdict: dict[str, Any], line: dict[str, Any]) -> str:
    lines = [f"# EvoKernel learning benchmark {meta.get('design', 'v3')} ({meta['backend']})", "",
             f"- date: {meta['date']}; git commit: {meta['git_commit']}; complete: {meta['complete']}",
             f"- model: {meta['model'].get('name')} ({meta['model'].get('endpoint')})",
             f"- screening: {meta['screening']['summary']}",
             f"- held out ({len(meta['heldout'])}): {', '.join(meta['heldout'])}",
             f"- curriculum ({len(meta['curriculum'])}, {meta['iterations']} iterations): {', '.join(meta['curriculum'])}",
             "", "| arm | held-out operators | drafts | pass@1 (mean over operators) [95% bootstrap] | pooled [95% Wilson] "
             "| compile errors | learning pass fast_0 |", "|---|---|---|---|---|---|---|"]
    for arm, f in evaluation.items():
        fast = learning.get(arm, {}).get("fast_0_final")
        lines.append(f"| {arm} | {f['operators']} | {f['drafts']} | {_pct(f['pass1'])}{_ci(f['pass1_ci95_bootstrap'])} "
                     f"| {f['feasible_drafts']}/{f['drafts']}{_ci(f['pass1_pooled_ci95_wilson'])} | "
                     f"{f['compile_errors']} | {_pct(fast)} |")
    if all("distinct_feasible_kernels" in f for f in evaluation.values()):  # from v6
        lines += ["", "Distinct feasible kernels per arm (equal text is one kernel; drafts that recorded their "
                  "sampling seed): " + "; ".join(f"{arm} {f['distinct_feasible_kernels']} of {f['feasible_drafts']} "
                                                  f"feasible drafts ({f['drafts_with_seed']} of {f['drafts']} seeded)"
                                                  for arm, f in evaluation.items()),
                  "", "Drafts shown a kernel the model wrote (a banked trace): " + "; ".join(
                      f"{arm} {f['shown_own_kernels']['drafts']} ({f['shown_own_kernels']['feasible']} passed; "
                      f"shown as {f['shown_own_kernels']['by_role'] or 'nothing'})" for arm, f in evaluation.items())]
    lines += ["", "The bootstraps resample the held-out operators (each operator's pass@1 over its drafts is one "
              "value; 10,000 resamples); Wilson pools every draft.", ""]
    lines += ["| comparison | operators | wins / losses / ties | mean difference [95% bootstrap] | p (Wilcoxon) "
              "| p (sign) |", "|---|---|---|---|---|---|"]
    for name, t in tests.items():
        diff = "—" if t["mean_difference"] is None else f"{t['mean_difference']:+.2f}"
        ci = t["mean_difference_ci95_bootstrap"]
        ci_text = "" if not ci else f" [{ci[0]:+.2f}, {ci[1]:+.2f}]"
        mark = " (primary)" if name == verdict["primary"] else ""
        lines.append(f"| {name.replace('_vs_', ' vs ')}{mark} | {t['operators']} | {t['wins']} / {t['losses']} / "
                     f"{t['ties']} | {diff}{ci_text} | {_p4(t['p_wilcoxon'])} | {_p4(t['p_sign'])} |")
    lines += ["", f"Primary hypothesis ({verdict['primary']}, alpha {verdict['alpha']}, target "
              f"+{verdict['target_points']:.0%}): " + json.dumps({k: v for k, v in verdict.items()
                                                                   if k not in ('primary', 'alpha', 'target_points')}),
              "", "Headline: " + ", ".join(f"{k}={v}" for k, v in line.items()), ""]
    return "\n".join(lines)


def _comparable(value: Any, results: str) -> Any:
    """A summary's figures as JSON gives them back, run folders relative to the results folder
    (the published run and its unpacked copy lie in different places)."""
    value = json.loads(json.dumps(value))
    for arm in value.get("learning", []):
        for replicate in arm.get("per_replicate", []):
            replicate["run_dir"] = os.path.relpath(replicate["run_dir"], results)
    return value


def rederived(result: Path) -> dict[str, Any]:
    """Every figure of a published run's summary.json (learning, evaluation, tests, verdict,
    headline; held-out operators, curriculum, completeness) computed again from its archive,
    unpacked to a temporary folder."""
    with tempfile.TemporaryDirectory(prefix="evokernel-rederive-") as work:
        folder = Path(work)
        unpack(result, folder)
        plan = plan_in(folder)
        screening = json.loads((folder / "screening.json").read_text())
        figures = tables(folder, plan, screening)
        planned = [f"learn-{a}" for a in plan["arms"]] + [f"eval-{a}-d{r}" for r in range(plan["eval_drafts"])
                                                          for a in plan["arms"]]
        again = {"learning": list(figures["learning"].values()), "evaluation": list(figures["evaluation"].values()),
                 "tests": figures["tests"], "verdict": figures["verdict"], "headline": figures["headline"],
                 "meta": {"screening": screening, "heldout": screening["heldout"], "curriculum": screening["curriculum"],
                          "complete": all(finished(folder / "arms" / name) for name in planned)}}
        return _comparable(again, work)


def differences(again: dict[str, Any], published: dict[str, Any]) -> list[str]:
    """The entries of `rederived`'s figures that the published summary.json does not hold alike."""
    kept = _comparable({key: published[key] for key in again if key != "meta"}, published["meta"]["results"])
    kept["meta"] = {key: published["meta"][key] for key in again["meta"]}
    differ = [key for key in again if key != "meta" and again[key] != kept[key]]
    return differ + [f"meta.{key}" for key in again["meta"] if again["meta"][key] != kept["meta"][key]]


def rederive(result: Path) -> dict[str, Any]:
    """The published run's tables re-derived from its archive: whether they match, and what differs."""
    published = json.loads((result / "summary.json").read_text())
    if published.get("headline", {}).get("design") not in DESIGNS:
        raise SystemExit(f"bench.learning rederive: {result} is not a table of this design (v2's results are "
                         "kept as results; their code is retired)")
    again = rederived(result)
    differ = differences(again, published)
    return {"bench": "learning", "rederived": str(result), "match": not differ, "differ": differ,
            "headline": again["headline"]}


def family_of(path: Path) -> str:
    """A task file's dominant operator family (actors/families.py)."""
    from actors.families import dominant_family

    return dominant_family(path.read_text())


def by_family(figures: dict[str, Any], families: dict[str, str]) -> dict[str, list[int]]:
    """[feasible, drafts] per family, pooled over its operators' drafts (the pilots' tables)."""
    counts: dict[str, list[int]] = {}
    for task, drafts in figures["drafts_by_operator"].items():
        entry = counts.setdefault(families[task], [0, 0])
        entry[0] += round(figures["pass1_by_operator"][task] * drafts)
        entry[1] += drafts
    return dict(sorted(counts.items()))
