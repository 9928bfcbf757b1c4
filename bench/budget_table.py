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
    return "\n".join(lines + sessions_lines(t.get("sessions", {}), t["headline"])) + "\n"


def sessions_lines(by_row: dict[str, list[dict[str, Any]]], headline: dict[str, Any]) -> list[str]:
    """Each row's sessions and the machine's speed in each (bench/budget_probe.py)."""
    lines = ["", "Sessions: the machine's speed at the model in each (s/token: the median seconds per generated token "
             "of the drafts that failed to compile; the probe: bench/budget_probe.py, taken before the session or just after it).", "",
             "| row | started (UTC) | hours | commit | load | attempts | s/token (drafts) | probe prompt tok/s | "
             "probe generated tok/s | cpu | cache flush MiB |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for row, found in by_row.items():
        for s in found:
            probe = s.get("probe") or {}
            lines.append(f"| {row} | {s['start'][:16].replace('T', ' ')} | {s['hours']:.2f} | {s['commit']} | "
                         f"{s['load1_median']} | {s['attempts']} | {s['s_per_token'] if s['s_per_token'] else '-'} ({s['compile_error_drafts']}) | "
                         f"{probe.get('prompt_tok_s', '-')} | {probe.get('generate_tok_s', '-')} | {probe.get('cpu', '-')} | "
                         f"{probe.get('cache_flush_mib', '-')} |")
    if headline.get("budget_share_speed_adjusted") is not None:
        lines += ["", f"The budget row's hours as a share of the full row's work at the budget row's speed: "
                      f"{headline['budget_share_speed_adjusted']} (nominal {1 / 3:.3f})."]
    return lines
