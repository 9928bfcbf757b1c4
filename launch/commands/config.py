"""`evokernel config show`: the effective settings after file, environment and flags."""

from __future__ import annotations

import argparse
import json

import yaml

from launch.config import Settings


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("config", help="show the effective configuration (secrets redacted)")
    sub = parser.add_subparsers(dest="config_command", metavar="ACTION")
    sub.required = True
    show = sub.add_parser("show", help="print the settings after file < env < flags")
    show.add_argument("--json", action="store_true", help="JSON instead of YAML")
    show.set_defaults(handler=_show)


def _show(args: argparse.Namespace, settings: Settings) -> int:
    data = settings.redacted()
    print(json.dumps(data, indent=2, default=str) if args.json else yaml.safe_dump(data, sort_keys=False), end="\n")
    return 0
