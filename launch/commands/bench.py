"""`evokernel bench`: benchmarks of EvoKernel's own components."""

from __future__ import annotations

import argparse

from launch.commands._pending import pending


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("bench", help="benchmarks of EvoKernel's own components")

    sub = parser.add_subparsers(dest="bench_command", metavar="WHAT")
    sub.required = True
    sub.add_parser("memory", help="memory actor retrieval and update benchmark").set_defaults(handler=pending(5, "benchmarks"))
    parser.set_defaults(handler=pending(5, "benchmarks"))
