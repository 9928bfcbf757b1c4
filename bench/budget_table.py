"""The time-budget benchmark's summary.md (bench/budget.py): the rows, then what each row did with
each operator, from the table `bench.budget.table` builds."""

from __future__ import annotations

from typing import Any


def markdown(t: dict[str, Any]) -> str:
    """summary.md: the rows, then what each row did with each operator."""
    plan, rows = t["plan"], t["rows"]
    lines = ["# EvoKernel time-budget benchmark (issue 67)", "",
             f"- slice: {len(plan['slice'])} operators of {plan['suite']} ({plan['slice_rule']}); "
             f"{plan['iterations']} iterations, seed {plan['seed']}; started at commit {plan['commit'][:12]} "
             "(each session's commit: segments.json)",
             f"- budget row: --hours {plan['budget_hours']} ({plan['budget_share']:.2f} of the full row's wall time)"
             if plan.get("budget_hours") is not None else "- budget row: not started", "",
             "| row | feasible | fast_1 | median best speedup | attempts | wall (h) | sessions | how operators stopped |",
             "|---|---|---|---|---|---|---|---|"]
    for row, f in rows.items():
        stops = ", ".join(f"{k} {v}" for k, v in sorted(f["stopped_by"].items()))
        lines.append(f"| {row}{'' if f['finished'] else ' (not finished)'} | {f['feasible']} | {f['fast_1']} | "
                     f"{f['median_speedup'] if f['median_speedup'] is not None else '-'} | {f['attempts']} | "
                     f"{f['wall_s'] / 3600:.2f} | {f['sessions']} | {stops or '-'} |")
    if "target_met" in t["headline"]:
        lines += ["", f"Target (budget >= 95% of full's feasible and fast_1): "
                      f"{'met' if t['headline']['target_met'] else 'not met'}."]
    names = list(rows)
    lines += ["", "Per operator: the best speedup over eager where feasible, '-' where not; the attempts kept; "
              "how it stopped.", "", "| operator | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]

    def cell(done: dict[str, Any] | None) -> str:
        if done is None:
            return "not ended"
        speed = f"{done['speedup']:.2f}x" if done["feasible"] and done["speedup"] else ("feasible" if done["feasible"]
                                                                                       else "-")
        return f"{speed}, {done['attempts']} att., {done['stopped_by']}"

    for task, by_row in t["operators"].items():
        lines.append(f"| {task} | " + " | ".join(cell(by_row.get(row)) for row in names) + " |")
    return "\n".join(lines) + "\n"
