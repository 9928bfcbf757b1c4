"""`evokernel run`: a campaign of draft-and-refine episodes over a task suite."""

from __future__ import annotations

import argparse

from launch.cli import add_config_flag
from launch.commands.doctor import run_doctor
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
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace, settings: Settings) -> int:
    # Until the campaign lands (issue #6), the main job checks what exists and says so.
    print("evokernel run: the campaign is not implemented yet (issue #6); checking this machine instead.")
    return run_doctor(argparse.Namespace(ray=True), settings)
