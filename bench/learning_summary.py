"""The learning benchmark's summary: per-arm figures over replicates, paired tests, the machine
and model, summary.md/.json.

Per-run figures come from `launch.report.analyse_run` (the numbers `evokernel report` draws),
so the table and the comparison report never disagree; bench.learning_stats pools them.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from statistics import median
from typing import Any

from bench.learning_stats import attempts_to_first_feasible, fast_0_curve, paired, score
from launch.report import RunReport

REPOSITORY = Path(__file__).resolve().parents[1]
# (better, worse): the comparisons the benchmark exists for, tested paired over operators
COMPARISONS = [("value", "similarity"), ("similarity", "none"), ("value", "none"), ("value+provenance", "value")]


def _wall_s(report: RunReport) -> float | None:
    if not (report.started_at and report.finished_at):
        return None
    started, finished = datetime.fromisoformat(report.started_at), datetime.fromisoformat(report.finished_at)
    return round((finished - started).total_seconds(), 1)


def failures_by_gate(reports: list[RunReport]) -> dict[str, int]:
    """Infeasible attempts of every operator and run, by the gate that stopped them, most frequent first."""
    total: dict[str, int] = {}
    for report in reports:
        for row in report.operators:
            for gate, count in row.failures.items():
                total[gate] = total.get(gate, 0) + count
    return dict(sorted(total.items(), key=lambda kv: (-kv[1], kv[0])))


def arm_figures(arm: str, runs: list[dict[str, Any]], iterations: int, level2: list[str]) -> dict[str, Any]:
    """One arm over its replicates; `runs` holds {"replicate", "seed", "report"} per replicate."""
    reports: list[RunReport] = [run["report"] for run in runs]
    rows = [row for report in reports for row in report.operators]
    firsts = [row.first_feasible_iteration for row in rows]
    curve = fast_0_curve(firsts, iterations)
    failures = failures_by_gate(reports)
    gains = sorted(row.speedup_best_over_first for row in rows if row.speedup_best_over_first)
    by_task: dict[str, list[int]] = {}
    for row in rows:
        by_task.setdefault(row.task, []).append(score(row.first_feasible_iteration, iterations))
    level2_firsts = [row.first_feasible_iteration for row in rows if row.task in level2]
    attempts = sum(report.attempts for report in reports)
    return {
        "arm": arm,
        "retrieval": reports[0].retrieval if reports else None,
        "replicates": len(runs),
        "operators": len(by_task),
        "attempts": attempts,
        "feasible_attempts": attempts - sum(failures.values()),
        "failures_by_gate": failures,
        "compile_errors": failures.get("compile", 0),
        "fast_0_final": curve[-1]["fast_0"] if curve else None,
        "fast_0_final_ci95": curve[-1]["ci95"] if curve else None,
        "fast_0_by_iteration": [point["fast_0"] for point in curve],
        "fast_0_ci95_by_iteration": [point["ci95"] for point in curve],
        "fast_0_level2": fast_0_curve(level2_firsts, iterations)[-1]["fast_0"] if level2_firsts else None,
        "attempts_to_first_feasible": attempts_to_first_feasible(firsts),
        "median_speedup_best_over_first": median(gains) if gains else None,
        "speedups_counted": len(gains),
        "score_by_operator": {task: round(sum(s) / len(s), 4) for task, s in by_task.items()},
        "tokens": sum(report.tokens for report in reports),
        "wall_s": sum(w for w in (_wall_s(report) for report in reports) if w is not None),
        "finished": all(report.finished_at is not None for report in reports),
        "per_replicate": [{
            "replicate": run["replicate"], "seed": run["seed"], "run_dir": run["report"].run_dir,
            "first_feasible": {row.task: row.first_feasible_iteration for row in run["report"].operators},
            "feasible_operators": run["report"].feasible_operators, "attempts": run["report"].attempts,
            "problems": run["report"].problems,
        } for run in runs],
    }


def comparisons(figures: dict[str, dict[str, Any]], level2: list[str]) -> dict[str, dict[str, Any]]:
    """Paired tests over operators of each arm's score (iterations with a feasible kernel,
    averaged over replicates): the planned arm pairs, and the value arm's level-2 operators
    (after the level-1 curriculum) against the same operators run cold (the transfer arm)."""
    tests = {}
    for better, worse in COMPARISONS:
        if better in figures and worse in figures:
            tests[f"{better}_vs_{worse}"] = paired(figures[better]["score_by_operator"],
                                                   figures[worse]["score_by_operator"])
    if "value" in figures and "transfer" in figures:
        warm = {t: s for t, s in figures["value"]["score_by_operator"].items() if t in level2}
        tests["level2_warm_value_vs_cold_transfer"] = paired(warm, figures["transfer"]["score_by_operator"])
    return tests


def headline(figures: dict[str, dict[str, Any]], tests: dict[str, dict[str, Any]]) -> dict[str, Any]:
    line: dict[str, Any] = {"bench": "learning"}
    line.update({f"fast_0_{arm}": f["fast_0_final"] for arm, f in figures.items()})
    line.update({f"speedup_best_over_first_{arm}": f["median_speedup_best_over_first"] for arm, f in figures.items()})
    for name, test in tests.items():
        line[f"p_value_{name}"] = test["p_wilcoxon"]
    if "value" in figures and "transfer" in figures:
        line["fast_0_level2_warm_value"] = figures["value"]["fast_0_level2"]
        line["fast_0_level2_cold_transfer"] = figures["transfer"]["fast_0_final"]
    return line


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


def _ci(interval: list[float] | None) -> str:
    return "" if not interval else f" [{interval[0]:.0%}, {interval[1]:.0%}]"


def _x(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}x"


def _p(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}" if value >= 0.001 else f"{value:.1e}"


ARM_COMMITS = "git_commits"  # in each arm's run folder: one line per start or resume


def arm_commits(run_dir: Path) -> list[str]:
    """The commits an arm ran under (bench.learning_arms.note_commit), oldest first, each once
    ([] for an arm run before they were recorded)."""
    path = run_dir / ARM_COMMITS
    lines = path.read_text().splitlines() if path.is_file() else []
    return list(dict.fromkeys(line.split()[0] for line in lines if line.strip()))


def commit_lines(meta: dict[str, Any]) -> list[str]:
    """Which code ran each arm, where it was recorded and is not only the start commit."""
    ran = {name: commits for name, commits in meta.get("arm_commits", {}).items() if commits}
    if not ran or all(commits == [meta["git_commit"]] for commits in ran.values()):
        return []
    unrecorded = [name for name in meta.get("arm_commits", {}) if name not in ran]
    return ["- code per arm (commits, in order of the arm's starts and resumes): "
            + "; ".join(f"{name} {', '.join(c[:9] for c in commits)}" for name, commits in ran.items())
            + (f"; not recorded: {', '.join(unrecorded)}" if unrecorded else "")]


def render_markdown(meta: dict[str, Any], arms: list[dict[str, Any]], tests: dict[str, dict[str, Any]],
                    line: dict[str, Any]) -> str:
    model, budgets = meta["model"], meta["budgets"]
    lines = [
        "# EvoKernel learning benchmark",
        "",
        f"- date: {meta['date']}; git commit: {meta['git_commit']}",
        *([] if meta.get("complete", True) else [
            f"- **interim**: {len(meta['runs_finished'])} of {len(meta['runs_finished']) + len(meta['runs_pending'])} "
            f"runs finished ({', '.join(meta['runs_finished']) or '—'}); pending: {', '.join(meta['runs_pending'])}"]),
        *commit_lines(meta),
        f"- machine: {meta['machine']['nproc']} CPUs ({meta['machine']['cpu_model']}), "
        f"{meta['machine']['ram_gib']} GiB RAM",
        f"- model: {model['name']} ({model['endpoint']}; GGUF sha256 {model.get('gguf_sha256') or '—'})",
        f"- budgets: {budgets['operators']} operators x {budgets['iterations']} iterations per arm, "
        f"{budgets['replicates']} replicate(s) (memory.seed {', '.join(map(str, meta['seeds']))}); "
        f"selection pass: {budgets['selection']}",
        "- operators (curriculum order of replicate 0, family in brackets): "
        + ", ".join(f"{t} [{meta['families'].get(t, '?')}]" for t in meta["tasks"]),
        f"- solved by the cold model in the selection pass: {', '.join(meta['easy']) or '—'}",
        f"- transfer: level-2 {', '.join(meta['transfer_tasks']) or '—'} run alone from the seeded bank, "
        "against the value arm's run of them after the level-1 operators",
        "",
        "fast_0 is pooled over operators and replicates, with a 95% Wilson interval; attempts to first "
        "feasible: median over operator runs (— when half or more are unsolved) and mean over the solved ones.",
        "",
        "| arm | retrieval | attempts | fast_0 final [95% CI] | fast_0 by iteration | attempts to first feasible "
        "| compile errors | failures by gate | median best/first | tokens | wall (s) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for arm in arms:
        curve = " ".join(f"{v:.2f}" for v in arm["fast_0_by_iteration"]) or "—"
        first = arm["attempts_to_first_feasible"]
        median_first = "—" if first["median"] is None else f"{first['median']:g}"
        mean_first = "" if first["mean_solved"] is None else f", mean {first['mean_solved']:g}"
        failures = ", ".join(f"{gate} {n}" for gate, n in arm["failures_by_gate"].items()) or "—"
        lines.append(
            f"| {arm['arm']} | {arm['retrieval']} | {arm['attempts']} | {_pct(arm['fast_0_final'])}"
            f"{_ci(arm['fast_0_final_ci95'])} | {curve} | {median_first} ({first['solved']}/{first['runs']} solved"
            f"{mean_first}) | {arm['compile_errors']} | {failures} | {_x(arm['median_speedup_best_over_first'])} "
            f"(n={arm['speedups_counted']}) | {arm['tokens']:,} | {arm['wall_s']:.0f} |")
    lines += ["", "Paired over operators (each operator's iterations with a feasible kernel, averaged over "
              "replicates; ties dropped): exact two-sided sign test and Wilcoxon signed-rank test.", "",
              "| comparison | operators | wins / losses / ties | mean difference | p (sign) | p (Wilcoxon) |",
              "|---|---|---|---|---|---|"]
    for name, test in tests.items():
        diff = "—" if test["mean_difference"] is None else f"{test['mean_difference']:+.2f}"
        lines.append(f"| {name.replace('_vs_', ' vs ')} | {test['operators']} | {test['wins']} / {test['losses']} / "
                     f"{test['ties']} | {diff} | {_p(test['p_sign'])} | {_p(test['p_wilcoxon'])} |")
    lines += ["", "Headline: " + ", ".join(f"{k}={v}" for k, v in line.items()), ""]
    return "\n".join(lines)


def publish_folder(results: Path, name: str, out: Path) -> Path:
    """Where `out`'s table was published before as the same kind (interim or final), whatever
    its date: a benchmark running past midnight or across sessions republishes in place.
    Otherwise `results/name`, or `name-2`, `name-3`, ... when that folder holds another
    benchmark's summary (two benchmarks on one day with one model)."""
    interim = "-interim" in name
    for earlier in sorted(results.glob("*/summary.json")):
        if ("-interim" in earlier.parent.name) == interim and _published_from(earlier) == str(out):
            return earlier.parent
    for n in range(1, 1000):
        target = results / (name if n == 1 else f"{name}-{n}")
        if not (target / "summary.json").is_file():  # `out`'s own was found above
            return target
    raise SystemExit(f"bench.learning: too many published results named {name}")


def drop_interim_publication(results: Path, out: Path) -> None:
    """The final table of `out` supersedes its interim one: remove that folder, and say so."""
    for earlier in sorted(results.glob("*-interim*/summary.json")):
        if _published_from(earlier) == str(out):
            shutil.rmtree(earlier.parent)
            print(f"[learning] removed the interim table {earlier.parent} (superseded by the final one)",
                  file=sys.stderr)


def _published_from(summary: Path) -> str | None:
    """The results folder a published summary.json was made from (None when unreadable)."""
    try:
        return json.loads(summary.read_text()).get("meta", {}).get("results")
    except (OSError, ValueError, AttributeError):
        return None


def started_at_commit(out: Path) -> str | None:
    """The commit the benchmark in `out` started at, recorded on its first start. Resuming with
    other code is allowed (a fix may be needed) but said aloud: its arms may not compare."""
    path = out / "git_commit"
    now = git_commit()
    if not path.is_file():
        path.write_text(f"{now or 'unknown'}\n")
        return now
    recorded = path.read_text().strip()
    if now and recorded != now:
        print(f"[learning] note: {out} was started at commit {recorded[:12]}, this is {now[:12]}: arms run by "
              "other code may not compare", file=sys.stderr)
    return None if recorded == "unknown" else recorded


def summarise(out: Path, runs: list[tuple[int, str, str]], finished: list[str], meta: dict[str, Any],
              publish_to: Path | None) -> dict[str, Any]:
    """summary.json/.md (and the comparison report) over the finished runs of `runs`
    ((replicate, arm, run name)); copied to `publish_to` when given. Returns the headline."""
    from launch.report import analyse_run
    from launch.report_writer import write_report

    done = [(replicate, arm, name) for replicate, arm, name in runs if name in finished]
    by_arm: dict[str, list[dict[str, Any]]] = {}
    for replicate, arm, name in done:
        report = analyse_run(out / "arms" / name)
        by_arm.setdefault(arm, []).append({"replicate": replicate, "seed": meta["seeds"][0] + replicate,
                                           "report": report})
    level2 = meta["transfer_tasks"]
    figures = {arm: arm_figures(arm, reps, meta["budgets"]["iterations"], level2) for arm, reps in by_arm.items()}
    tests = comparisons(figures, level2)
    line = headline(figures, tests)
    meta = {**meta, "complete": len(done) == len(runs),
            "arm_commits": {name: arm_commits(out / "arms" / name) for _, _, name in done},
            "runs_finished": [name for _, _, name in done],
            "runs_pending": [name for _, _, name in runs if name not in finished]}
    write_report([out / "arms" / name for _, _, name in done], out / "report")
    arms = list(figures.values())
    (out / "summary.json").write_text(json.dumps({"meta": meta, "arms": arms, "tests": tests, "headline": line},
                                                 indent=2) + "\n")
    (out / "summary.md").write_text(render_markdown(meta, arms, tests, line))
    if publish_to is not None:
        publish_to.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(out / "summary.md", publish_to / "summary.md")
        shutil.copyfile(out / "summary.json", publish_to / "summary.json")
    return line
