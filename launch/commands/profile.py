"""`evokernel profile`: time a candidate kernel against the eager and compiled baselines."""

from __future__ import annotations

import argparse

from launch.cli import add_config_flag
from launch.commands._pending import pending


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("profile", help="time a candidate kernel against the eager and compiled baselines")

    parser.add_argument("task_file", metavar="TASK_FILE")
    parser.add_argument("candidate_file", metavar="CANDIDATE_FILE")
    add_config_flag(parser, "--backend", "harness.backend", choices=["auto", "cpu", "cuda", "npu"])
    parser.add_argument("--json", action="store_true", help="last line: one JSON profile")
    parser.set_defaults(handler=pending(4, "kernel profiling"))
