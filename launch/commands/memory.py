"""`evokernel memory`: inspect, seed, export and import the memory bank."""

from __future__ import annotations

import argparse

from launch.cli import add_config_flag
from launch.commands._pending import pending


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("memory", help="inspect, seed, export and import the memory bank")

    add_config_flag(parser, "--memory", "memory.uri", metavar="URI", help="LanceDB memory bank")
    sub = parser.add_subparsers(dest="memory_command", metavar="ACTION")
    sub.required = True
    for action in ("stats", "search", "show", "export", "import", "seed"):
        sub.add_parser(action).set_defaults(handler=pending(5, "the memory bank commands"))
    parser.set_defaults(handler=pending(5, "the memory bank commands"))
