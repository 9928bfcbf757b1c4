"""`evokernel report`: write summary.json and report.html for run folders."""

from __future__ import annotations

import argparse
import sys
from datetime import datetime
from pathlib import Path

from launch.cli import UsageError
from launch.config import Settings


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "report", help="write summary.json and report.html for run folders",
        description="Correctness and speedup figures for one run, or several runs side by side "
                    "(e.g. the retrieval ablations: one line per run, labelled by retrieval mode).")
    parser.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", type=Path, help="run folder(s) of `evokernel run`")
    parser.add_argument("--out", type=Path, metavar="DIR",
                        help="where to write (default: RUN_DIR/report for one run, reports/<time> for several)")
    parser.set_defaults(handler=run_report)


def default_out_dir(run_dirs: list[Path]) -> Path:
    if len(run_dirs) == 1:
        return run_dirs[0] / "report"
    return Path("reports") / datetime.now().strftime("%Y%m%d-%H%M%S")


def run_report(args: argparse.Namespace, settings: Settings) -> int:
    from launch.report_writer import write_report  # matplotlib loads only for this command
    from launch.run_records import CorruptRunFolder

    run_dirs: list[Path] = args.run_dirs
    for run_dir in run_dirs:
        if not run_dir.is_dir():
            raise UsageError(f"not a run folder: {run_dir}")
    out_dir: Path = args.out or default_out_dir(run_dirs)
    # The report's summary.json must never replace a run's own summary.json.
    if any(out_dir.resolve() == run_dir.resolve() for run_dir in run_dirs):
        raise UsageError(f"--out {out_dir} is a run folder: its summary.json would be overwritten")
    try:
        reports, files = write_report(run_dirs, out_dir)
    except CorruptRunFolder as exc:  # figures from a damaged file would mislead: nothing is written
        print(f"evokernel report: {exc}", file=sys.stderr)
        return 2  # bad input (docs/harness.md, "Exit codes")
    for report in reports:
        print(f"{report.label}: {len(report.operators)} operators, {report.attempts} attempts, "
              f"fast_0 {report.feasible_operators}/{len(report.operators)}, "
              f"fast_1 {report.faster_than_eager_operators}/{len(report.operators)}"
              + (f", {len(report.problems)} problem(s) noted" if report.problems else ""))
    print(f"wrote {files.html} and {files.summary}")
    return 0
