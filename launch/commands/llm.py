"""`evokernel llm`: fetch and serve the offline default model."""

from __future__ import annotations

import argparse

from launch.commands._pending import pending


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("llm", help="fetch and serve the offline default model")

    sub = parser.add_subparsers(dest="llm_command", metavar="ACTION")
    sub.required = True
    sub.add_parser("fetch", help="download and check the local model").set_defaults(handler=pending(8, "the local LLM commands"))
    sub.add_parser("serve", help="serve the local model on loopback").set_defaults(handler=pending(8, "the local LLM commands"))
    parser.set_defaults(handler=pending(8, "the local LLM commands"))
