"""bench/climb.py's table: per operator and arm the median over seeds of the best kernel's modelled
speedup over the first and over eager, the headline over the operators whose first kernel is
scalar, what each refinement was shown, and the publication under bench/results/."""

from __future__ import annotations

import json
import statistics
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.learning.archive import publish_table
from bench.learning.publish import git_commit, machine, started_at_commit


def headline_figures(best_over_first: list[float], best_over_eager: list[float]) -> dict[str, float | None]:
    """The headline's rule over operators (each already a median over its seeds): the median
    best/first, and the shares within 2x of eager and faster than it. bench/climb_sensitivity.py
    applies it too, so the two cannot drift apart."""
    if not best_over_first:
        return {"median_best_over_first": None, "share_within_2x_eager": None, "fast_1": None}
    return {"median_best_over_first": round(statistics.median(best_over_first), 3),
            "share_within_2x_eager": round(sum(e >= 0.5 for e in best_over_eager) / len(best_over_eager), 3),
            "fast_1": round(sum(e > 1 for e in best_over_eager) / len(best_over_eager), 3)}


def summarise(out: Path, plan: dict[str, Any], model: dict[str, Any], publish: bool = False) -> dict[str, Any]:
    firsts = {Path(p).stem: json.loads((out / "first" / f"{Path(p).stem}.json").read_text())
              for p in plan["operators"] if (out / "first" / f"{Path(p).stem}.json").is_file()}
    results: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for arm in plan["arms"]:
        for seed in plan["seeds"]:
            for path in sorted((out / "runs" / f"{arm}-s{seed}").glob("*.json")):
                record = json.loads(path.read_text())
                results.setdefault(record["task"], {}).setdefault(arm, []).append(record)
    per_operator = {}
    for task, arms in results.items():
        row: dict[str, Any] = {"first_rung": firsts[task].get("rung"), "first_origin": firsts[task].get("origin")}
        for arm, records in arms.items():
            row[arm] = {"seeds": len(records),
                        "best_over_first": statistics.median(r["best_over_first"] for r in records),
                        "best_over_eager": statistics.median(r["best_over_eager"] for r in records),
                        "shown": [[f"{f['shown']}:{f['gate']}" for f in r["refinements"]] for r in records],
                        "correct_refinements": sum(f["gate"] == "ok" for r in records for f in r["refinements"]),
                        "refinements": sum(len(r["refinements"]) for r in records)}
        per_operator[task] = row
    # the operators of the headline: those whose first kernel is scalar (all of them, run or not yet)
    scalar = [t for t, f in firsts.items() if f.get("feasible") and f.get("rung") == "first"]
    headline: dict[str, Any] = {"bench": "climb", "backend": plan["backend"], "operators": len(scalar)}
    for arm in plan["arms"]:
        done = [per_operator[t][arm] for t in scalar if arm in per_operator.get(t, {})]
        figures = headline_figures([d["best_over_first"] for d in done], [d["best_over_eager"] for d in done])
        headline.update({f"{name}_{arm}": value for name, value in figures.items()})
        headline[f"operators_run_{arm}"] = len(done)  # of `operators`: those with at least one seed finished
    expected = len(plan["seeds"]) * len(plan["arms"]) * sum(1 for f in firsts.values() if f["feasible"])
    finished = sum(len(records) for arms in results.values() for records in arms.values())
    meta = {"date": datetime.now(UTC).isoformat(timespec="seconds"), "git_commit": started_at_commit(out),
            "summarised_at_commit": git_commit(), "machine": machine(), "model": model, "results": str(out),
            "k": plan["k"], "seeds": plan["seeds"], "arms": plan["arms"], "complete": finished == expected,
            "finished_runs": finished, "expected_runs": expected,
            "first_kernels": {t: {k: f.get(k) for k in ("origin", "feasible", "rung", "reason")} for t, f in firsts.items()}}
    summary = {"meta": meta, "per_operator": per_operator, "headline": headline}
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    (out / "summary.md").write_text(render(meta, per_operator, headline))
    if publish:
        _publish(out, meta)
    return {**headline, "complete": meta["complete"], "results": str(out)}


def render(meta: dict[str, Any], per_operator: dict[str, Any], headline: dict[str, Any]) -> str:
    arms = meta["arms"]
    lines = [f"# EvoKernel climb pilot (npu-twin, modelled timings): {meta['k']} refinements from each first kernel", "",
             f"- date: {meta['date']}; git commit: {meta['git_commit']}; complete: {meta['complete']} "
             f"({meta['finished_runs']} of {meta['expected_runs']} operator runs); seeds {meta['seeds']}",
             f"- model: {meta['model'].get('name')} ({meta['model'].get('endpoint')})", "",
             "| operator | first kernel | " + " | ".join(f"{a}: best/first | {a}: best/eager | {a}: correct"
                                                        for a in arms) + " |",
             "|---|---|" + "---|---|---|" * len(arms)]
    for task, row in per_operator.items():
        cells = []
        for arm in arms:
            d = row.get(arm)
            cells.append("— | — | —" if d is None else
                         f"{d['best_over_first']:.3g}x | {d['best_over_eager']:.3g}x | {d['correct_refinements']}/{d['refinements']}")
        lines.append(f"| {task} | {row['first_rung']} | " + " | ".join(cells) + " |")
    lines += ["", "Headline (operators whose first kernel is scalar): " + json.dumps(headline), "",
              "What each refinement was shown (per seed, `<option>:<gate>`):", ""]
    for task, row in per_operator.items():
        for arm in arms:
            if arm in row:
                lines.append(f"- {task} {arm}: " + "; ".join(" ".join(s) for s in row[arm]["shown"]))
    left = [t for t, f in meta["first_kernels"].items() if not f["feasible"]]
    lines += ["", f"Left out (no feasible first kernel): {', '.join(left) or 'none'}", ""]
    return "\n".join(lines)


def _publish(out: Path, meta: dict[str, Any]) -> None:
    # an unfinished pilot's table is published as interim (its runs so far, marked complete: false), never as the result
    target = publish_table(out, meta, "climb-npu-twin" + ("" if meta["complete"] else "-interim"))
    print(f"[climb] published: {target}", file=sys.stderr)
