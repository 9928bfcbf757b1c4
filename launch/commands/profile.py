"""`evokernel profile`: time a candidate kernel against the eager and compiled baselines."""

from __future__ import annotations

import argparse
import json

from launch.cli import add_config_flag
from launch.config import Settings


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("profile", help="time a candidate kernel against the eager and compiled baselines")

    parser.add_argument("task_file", metavar="TASK_FILE")
    parser.add_argument("candidate_file", metavar="CANDIDATE_FILE")
    add_config_flag(parser, "--backend", "harness.backend", choices=["auto", "cpu", "cuda", "npu", "npu-twin"])
    parser.add_argument("--format", choices=["auto", "modelnew", "kernel"], default="auto",
                        help="the candidate's format (default auto: ModelNew when it defines class ModelNew)")
    add_config_flag(parser, "--sizes", "harness.sizes", choices=["fit", "original"])
    add_config_flag(parser, "--trials", "harness.timed_trials", type=int, help="timed trials (default 50)")
    parser.add_argument("--json", action="store_true", help="last line: one JSON profile")
    parser.set_defaults(handler=handle)


def _ms(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4g} ms"


def handle(args: argparse.Namespace, settings: Settings) -> int:
    from launch.commands.verify import exit_code, run_gates

    task, candidate, verdict, report = run_gates(args, settings, profile=True)
    print(f"{task.task_id} ({candidate.format} format, sizes {task.sizes})")
    if report is None:
        where = "NOT JUDGED (infrastructure failure)" if verdict.gate == "infra" else f"INFEASIBLE at the {verdict.gate} gate"
        print(f"  {where}: {verdict.category}: {verdict.reason}")
        if verdict.details:
            print("  " + verdict.details.replace("\n", "\n  "))
    else:
        if report.timing == "modelled":
            print("  timing: modelled by the Ascend C twin from counted work, not measured on an NPU")
        print(f"  candidate      median {_ms(report.median_ms)}  IQR {_ms(report.iqr_ms)}  ({report.trials} trials)")
        print(f"  eager          median {_ms(report.baseline_eager_ms)}  speedup {report.speedup_vs_eager:.3g}x")
        if report.baseline_compile_ms is not None:
            print(f"  torch.compile  median {_ms(report.baseline_compile_ms)}  speedup {report.speedup_vs_compile:.3g}x")
        else:
            print(f"  torch.compile  no baseline: {report.baseline_compile_error}")
        print(f"  roofline       {report.bound}-bound; {report.achieved_gbps:.3g} GB/s, {report.achieved_gflops:.3g} GFLOP/s")
        for hint in report.hints:
            print(f"    - {hint}")
        if report.flags:
            print(f"  flags: {', '.join(report.flags)}")
    if args.json:
        print(json.dumps({"task": task.task_id, "format": candidate.format, "feasible": verdict.feasible,
                          "gate": verdict.gate, "reason": verdict.reason, "verdict": verdict.model_dump(),
                          "profile": report.model_dump() if report else None}))
    return exit_code(verdict, report is not None)
