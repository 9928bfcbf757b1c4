"""The `evokernel` command: global options, config flags, and one module per subcommand."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

import yaml

from launch import __version__
from launch.config import Settings, load_settings, set_dotted
from launch.logging import configure_logging

# Subcommand modules, in the order `--help` lists them.
COMMAND_MODULES = ("run", "verify", "profile", "tasks", "memory", "llm", "report", "bench", "doctor", "config")
CONFIG_DEST_PREFIX = "cfg:"


class UsageError(Exception):
    """A mistake in what the user asked for: reported without a traceback, exit code 2."""


def add_config_flag(parser: argparse.ArgumentParser, flag: str, key: str, **kwargs: Any) -> None:
    """A flag that overrides the config field at dotted `key` when (and only when) given."""
    parser.add_argument(flag, dest=CONFIG_DEST_PREFIX + key, default=argparse.SUPPRESS, **kwargs)


def config_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """Nested dict of the config flags the user gave, plus every `--set key=value`."""
    overrides: dict[str, Any] = {}
    for name, value in vars(args).items():
        if name.startswith(CONFIG_DEST_PREFIX):
            set_dotted(overrides, name[len(CONFIG_DEST_PREFIX):], value)
    for assignment in getattr(args, "set", None) or []:
        key, sep, raw = assignment.partition("=")
        if not sep or not key:
            raise UsageError(f"--set wants KEY=VALUE, got {assignment!r}")
        set_dotted(overrides, key.strip(), yaml.safe_load(raw) if raw else "")
    return overrides


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="evokernel",
        description="Self-evolving kernel synthesis: draft, verify and refine kernels with a value-driven memory.",
    )
    parser.add_argument("--version", action="version", version=f"evokernel {__version__}")
    _add_common_options(parser)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.required = True
    for name in COMMAND_MODULES:
        module = __import__(f"launch.commands.{name}", fromlist=["register"])
        module.register(subparsers)
    # The common options work after the subcommand too (`evokernel run --set k=v`); there they
    # default to nothing, so they never erase what was given before the subcommand.
    for subparser in set(subparsers.choices.values()):
        _add_common_options(subparser, suppress=True)
    return parser


def _add_common_options(parser: argparse.ArgumentParser, suppress: bool = False) -> None:
    group = parser.add_argument_group("common options") if suppress else parser
    default = {"default": argparse.SUPPRESS} if suppress else {}
    group.add_argument("--config", metavar="FILE", help="YAML settings file (also $EVOKERNEL_CONFIG)", **default)
    group.add_argument("--set", action="append", metavar="KEY=VALUE",
                       help="override any setting, e.g. memory.alpha=0.3", **default)
    group.add_argument("--log-json", dest=CONFIG_DEST_PREFIX + "log_json", action="store_const", const=True,
                       default=argparse.SUPPRESS, help="JSON logs (default when stderr is not a terminal)")
    group.add_argument("--log-level", dest=CONFIG_DEST_PREFIX + "log_level", default=argparse.SUPPRESS,
                       choices=["debug", "info", "warning", "error"])


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        settings: Settings = load_settings(args.config, config_overrides(args))
    except UsageError as exc:
        parser.error(str(exc))
    except Exception as exc:  # a bad file, env var or flag value: say which, no traceback
        print(f"evokernel: invalid configuration: {exc}", file=sys.stderr)
        return 2
    api_key = settings.llm.api_key.get_secret_value() if settings.llm.api_key else None
    configure_logging(settings.log_json, settings.log_level, secrets=[api_key] if api_key else [])
    try:
        return int(args.handler(args, settings) or 0)
    except UsageError as exc:
        print(f"evokernel {args.command}: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("evokernel: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
