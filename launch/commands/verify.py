"""`evokernel verify`: verify a candidate kernel against a task."""

from __future__ import annotations

import argparse

from launch.cli import add_config_flag
from launch.commands._pending import pending


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("verify", help="verify a candidate kernel against a task")

    parser.add_argument("task_file", metavar="TASK_FILE")
    parser.add_argument("candidate_file", metavar="CANDIDATE_FILE")
    add_config_flag(parser, "--backend", "harness.backend", choices=["auto", "cpu", "cuda", "npu"])
    add_config_flag(parser, "--format", "harness.candidate_format", choices=["auto", "modelnew", "kernel"])
    parser.add_argument("--json", action="store_true", help="last line: one JSON verdict")
    parser.set_defaults(handler=pending(4, "kernel verification"))
