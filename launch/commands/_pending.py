"""Handlers for subcommands whose implementation has not landed yet (removed as they land)."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from launch.config import Settings


def pending(issue: int, what: str) -> Callable[[argparse.Namespace, Settings], int]:
    def handler(args: argparse.Namespace, settings: Settings) -> int:
        print(f"evokernel {args.command}: {what} is not implemented yet (tracked in issue #{issue}).")
        return 2

    return handler
