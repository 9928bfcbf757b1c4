"""`evokernel tasks`: load, fit and run every task of a suite."""

from __future__ import annotations

import argparse

from launch.commands._pending import pending


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("tasks", help="load, fit and run every task of a suite")

    sub = parser.add_subparsers(dest="tasks_command", metavar="ACTION")
    sub.required = True
    check = sub.add_parser("check", help="load every task, fit its sizes, run its reference")
    check.add_argument("suite_dirs", nargs="+", metavar="SUITE_DIR")
    check.add_argument("--json", action="store_true")
    check.set_defaults(handler=pending(4, "task suite checking"))
    parser.set_defaults(handler=pending(4, "task suite checking"))
