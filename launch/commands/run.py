"""`evokernel run`: a campaign of draft-and-refine episodes over a task suite."""

from __future__ import annotations

import argparse
import asyncio
import sys
from contextlib import ExitStack
from pathlib import Path

from launch.campaign import Campaign, CampaignError, default_suite, new_run_id, select_tasks
from launch.cli import UsageError, add_config_flag
from launch.config import Settings


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("run", help="run draft-and-refine episodes over a task suite")
    add_config_flag(parser, "--suite", "run.suite", metavar="SUITE_DIR", help="task folder (default: bundled CPU suite)")
    add_config_flag(parser, "--tasks", "run.tasks", metavar="GLOB", help="select task files by name")
    add_config_flag(parser, "--out", "run.out", metavar="RUN_DIR", help="where summary.json and attempts go")
    add_config_flag(parser, "--iterations", "episode.iterations", type=int, metavar="T", help="attempts per operator")
    add_config_flag(parser, "--llm-base-url", "llm.base_url", metavar="URL", help="OpenAI-compatible endpoint")
    add_config_flag(parser, "--llm-model", "llm.model", metavar="M", help="model name")
    add_config_flag(parser, "--memory", "memory.uri", metavar="URI", help="LanceDB memory bank")
    add_config_flag(parser, "--backend", "harness.backend", choices=["auto", "cpu", "cuda", "npu"])
    add_config_flag(parser, "--retrieval", "memory.retrieval", choices=["value", "similarity", "none"])
    add_config_flag(parser, "--ray-address", "ray.address", metavar="auto|local|ADDR")
    parser.add_argument("--no-ray", action="store_true",
                        help="single process, no Ray (debugging; the same episode code)")
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace, settings: Settings) -> int:
    suite = Path(settings.run.suite).expanduser() if settings.run.suite else default_suite()
    try:
        tasks = select_tasks(suite, settings.run.tasks)
    except CampaignError as exc:
        raise UsageError(str(exc)) from None
    run_id = new_run_id()
    run_dir = Path(settings.run.out).expanduser() if settings.run.out else Path("runs") / run_id
    with ExitStack() as stack:
        if settings.llm.base_url is None:
            settings = _with_local_llm(settings, stack)
        campaign = Campaign(settings, run_dir, use_ray=not args.no_ray, run_id=run_id)
        try:
            summary = asyncio.run(campaign.run(tasks))
        except CampaignError as exc:
            print(f"evokernel run: stopped: {exc}\n  partial results in {run_dir}", file=sys.stderr)
            return 1
    _print_summary(summary, run_dir)
    return 0


def _with_local_llm(settings: Settings, stack: ExitStack) -> Settings:
    """No endpoint configured: serve the offline default model for the duration of the run."""
    from launch.local_llm import LocalLLMError, local_llm_config_for_agent, local_llm_server

    try:
        base_url = stack.enter_context(local_llm_server(settings))
        llm = local_llm_config_for_agent(settings.llm, settings.local_llm.spec(), base_url)
    except LocalLLMError as exc:
        raise UsageError(f"{exc}\n  or point the run at an OpenAI-compatible endpoint with --llm-base-url URL") from None
    return settings.model_copy(update={"llm": llm})


def _print_summary(summary: dict, run_dir: Path) -> None:
    for op in summary["operators"]:
        if op["feasible"]:
            outcome = f"{op['best_latency_ms']:.4g} ms, {op['speedup_vs_eager'] or 0:.2f}x eager"
        else:
            outcome = "no feasible kernel" + (f" ({op['error']})" if op.get("error") else "")
        print(f"{op['task']:<32} {outcome:<36} {op['attempts']:>3} attempts {op['tokens']:>8} tokens")
    t = summary["totals"]
    print(f"{t['feasible']}/{t['operators']} operators feasible; {t['attempts']} attempts, {t['tokens']} tokens")
    print(f"run folder: {run_dir}  (summary.json, attempts.jsonl)")
