"""`evokernel verify`: verify a candidate kernel against a task."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from launch.cli import UsageError, add_config_flag
from launch.config import Settings


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("verify", help="verify a candidate kernel against a task")

    parser.add_argument("task_file", metavar="TASK_FILE")
    parser.add_argument("candidate_file", metavar="CANDIDATE_FILE")
    add_config_flag(parser, "--backend", "harness.backend", choices=["auto", "cpu", "cuda", "npu", "npu-twin"])
    parser.add_argument("--format", choices=["auto", "modelnew", "kernel"], default="auto",
                        help="the candidate's format (default auto: ModelNew when it defines class ModelNew)")
    add_config_flag(parser, "--sizes", "harness.sizes", choices=["fit", "original"],
                    help="fit (default): shrink the task's sizes to the budget; original: keep them")
    parser.add_argument("--json", action="store_true", help="last line: one JSON verdict")
    parser.set_defaults(handler=handle)


def load_inputs(args: argparse.Namespace, settings: Settings):
    """(task, candidate) from the command line; UsageError for what the user got wrong, and
    before the task is loaded, for a backend that cannot run here (what is missing)."""
    from npu_pool.sandbox.task_loader import load_task_for
    from npu_pool.tasks.spec import TaskLoadError
    from npu_pool.verdict import Candidate, detect_format

    candidate_path = Path(args.candidate_file)
    if not candidate_path.is_file():
        raise UsageError(f"candidate file not found: {candidate_path}")
    if not Path(args.task_file).is_file():
        raise UsageError(f"task file not found: {args.task_file}")
    source = candidate_path.read_text()
    fmt = args.format
    candidate = Candidate(source=source, format=detect_format(source) if fmt == "auto" else fmt)
    require_backend(settings.harness.backend, candidate.format)
    try:
        task = load_task_for(args.task_file, settings.harness)
    except TaskLoadError as exc:
        raise UsageError(str(exc)) from exc
    return task, candidate


def require_backend(name: str, candidate_format: str | None) -> None:
    """Fail fast (UsageError, exit 2) when backend `name` cannot build and run `candidate_format`
    candidates here, saying what is missing; nothing has been compiled yet."""
    from npu_pool.backends import backend_ready

    ready, why = backend_ready(name, candidate_format)
    if not ready:
        raise UsageError(why)


def run_gates(args: argparse.Namespace, settings: Settings, profile: bool):
    from npu_pool.backends import BackendUnavailable
    from npu_pool.sandbox.confinement import SandboxUnavailable
    from npu_pool.verifier import HarnessInternalError, evaluate

    task, candidate = load_inputs(args, settings)
    try:
        verdict, report = evaluate(task, candidate, settings.harness, profile=profile)
    except (BackendUnavailable, SandboxUnavailable) as exc:
        raise UsageError(str(exc)) from exc
    except HarnessInternalError as exc:
        raise UsageError(f"internal error: {exc}") from exc
    return task, candidate, verdict, report


def exit_code(verdict, passed: bool) -> int:
    """0 passed, 1 the candidate failed, 2 the machine or the harness failed (gate `infra`)."""
    return 2 if verdict.gate == "infra" else 0 if passed else 1


def handle(args: argparse.Namespace, settings: Settings) -> int:
    task, candidate, verdict, _ = run_gates(args, settings, profile=False)
    status = "FEASIBLE" if verdict.feasible else (
        "NOT JUDGED: an infrastructure failure, not the candidate's" if verdict.gate == "infra"
        else f"INFEASIBLE at the {verdict.gate} gate")
    print(f"{task.task_id} ({candidate.format} format, sizes {task.sizes}): {status}")
    print(f"  {verdict.category}: {verdict.reason}")
    if verdict.details and not verdict.feasible:
        print("  " + verdict.details.replace("\n", "\n  "))
    if verdict.flags:
        print(f"  flags: {', '.join(verdict.flags)}")
    if args.json:
        from npu_pool.backends import timing_kind

        print(json.dumps({"task": task.task_id, "format": candidate.format, **verdict.model_dump(),
                          "timing": timing_kind(settings.harness.backend)}))
    return exit_code(verdict, verdict.feasible)
