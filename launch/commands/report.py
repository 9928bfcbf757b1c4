"""`evokernel report`: write summary.json and report.html for run folders."""

from __future__ import annotations

import argparse

from launch.commands._pending import pending


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("report", help="write summary.json and report.html for run folders")

    parser.add_argument("run_dirs", nargs="+", metavar="RUN_DIR")
    parser.set_defaults(handler=pending(7, "reports"))
