"""The learning benchmark's summary: per-arm figures, the machine and model, summary.md/.json.

Figures come from `launch.report.analyse_run` (the same numbers `evokernel report` draws), so
the table and the comparison report never disagree.
"""

from __future__ import annotations

import hashlib
import os
import platform
import subprocess
from datetime import datetime
from pathlib import Path
from typing import Any

from launch.report import RunReport

REPOSITORY = Path(__file__).resolve().parents[1]


def _wall_s(report: RunReport) -> float | None:
    if not (report.started_at and report.finished_at):
        return None
    started, finished = datetime.fromisoformat(report.started_at), datetime.fromisoformat(report.finished_at)
    return round((finished - started).total_seconds(), 1)


def fast_0_on(report: RunReport, tasks: list[str]) -> list[float]:
    """fast_0(t) restricted to `tasks` (the transfer comparison), over the report's iterations."""
    rows = [row for row in report.operators if row.task in tasks]
    if not rows:
        return []
    return [round(sum(1 for r in rows if r.first_feasible_iteration is not None and r.first_feasible_iteration <= t)
                  / len(rows), 4) for t in report.curves.iterations]


def failures_by_gate(report: RunReport) -> dict[str, int]:
    """Infeasible attempts of every operator, by the gate that stopped them, most frequent first."""
    total: dict[str, int] = {}
    for row in report.operators:
        for gate, count in row.failures.items():
            total[gate] = total.get(gate, 0) + count
    return dict(sorted(total.items(), key=lambda kv: (-kv[1], kv[0])))


def arm_figures(arm: str, report: RunReport, transfer_tasks: list[str]) -> dict[str, Any]:
    fast_0 = [round(v, 4) for v in report.curves.fast_0]
    gains = report.speedup_best_over_first
    failures = failures_by_gate(report)
    return {
        "arm": arm,
        "retrieval": report.retrieval,
        "run_dir": report.run_dir,
        "operators": len(report.operators),
        "attempts": report.attempts,
        "feasible_attempts": report.attempts - sum(failures.values()),
        "failures_by_gate": failures,
        "feasible_operators": report.feasible_operators,
        "fast_0_final": fast_0[-1] if fast_0 else None,
        "fast_0_by_iteration": fast_0,
        "fast_1_final": round(report.curves.fast_1[-1], 4) if report.curves.fast_1 else None,
        "fast_0_transfer_tasks": fast_0_on(report, transfer_tasks),
        "median_speedup_best_over_first": gains.median,
        "speedups_counted": gains.n,
        "tokens": report.tokens,
        "wall_s": _wall_s(report),
        "finished": report.finished_at is not None,
        "problems": report.problems,
    }


def git_commit() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPOSITORY, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _ram_gib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 2**20, 1)
    except OSError:
        pass
    return None


def machine() -> dict[str, Any]:
    return {"nproc": os.cpu_count(), "cpu_model": _cpu_model(), "ram_gib": _ram_gib(),
            "platform": platform.platform(), "python": platform.python_version()}


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        while chunk := stream.read(1 << 22):
            digest.update(chunk)
    return digest.hexdigest()


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:.0%}"


def _x(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}x"


def render_markdown(meta: dict[str, Any], arms: list[dict[str, Any]], headline: dict[str, Any]) -> str:
    model, budgets = meta["model"], meta["budgets"]
    lines = [
        "# EvoKernel learning benchmark",
        "",
        f"- date: {meta['date']}; git commit: {meta['git_commit']}",
        f"- machine: {meta['machine']['nproc']} CPUs ({meta['machine']['cpu_model']}), "
        f"{meta['machine']['ram_gib']} GiB RAM",
        f"- model: {model['name']} ({model['endpoint']}; GGUF sha256 {model.get('gguf_sha256') or '—'})",
        f"- budgets: {budgets['operators']} operators x {budgets['iterations']} iterations per arm; "
        f"selection pass: {budgets['selection']}; memory.seed {meta['seed']}",
        f"- operators: {', '.join(meta['tasks'])}",
        f"- transfer: level-2 {', '.join(meta['transfer_tasks']) or '—'} on a bank warmed on level-1 "
        f"{', '.join(meta['warm_tasks']) or '—'}",
        "",
        "| arm | retrieval | operators | attempts | feasible attempts | fast_0 final | fast_0 by iteration "
        "| fast_0 on transfer ops | median best/first | failures by gate | tokens | wall (s) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for arm in arms:
        curve = " ".join(f"{v:.2f}" for v in arm["fast_0_by_iteration"]) or "—"
        transfer = f"{arm['fast_0_transfer_tasks'][-1]:.0%}" if arm["fast_0_transfer_tasks"] else "—"
        failures = ", ".join(f"{gate} {n}" for gate, n in arm["failures_by_gate"].items()) or "—"
        lines.append(f"| {arm['arm']} | {arm['retrieval']} | {arm['operators']} | {arm['attempts']} | "
                     f"{arm['feasible_attempts']} | {_pct(arm['fast_0_final'])} | {curve} | {transfer} | "
                     f"{_x(arm['median_speedup_best_over_first'])} (n={arm['speedups_counted']}) | {failures} | "
                     f"{arm['tokens']:,} | {arm['wall_s'] if arm['wall_s'] is not None else '—'} |")
    lines += ["", "Headline: " + ", ".join(f"{k}={v}" for k, v in headline.items()), ""]
    return "\n".join(lines)
