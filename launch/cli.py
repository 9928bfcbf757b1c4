"""The `evokernel` command: global options, config flags, and one module per subcommand, imported
only when that subcommand runs."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Iterable, Sequence
from typing import Any

import yaml

from launch import __version__
from launch.config import Settings, load_settings, set_dotted
from launch.logging import configure_logging

# Subcommands, in the order `--help` lists them, with the line `--help` shows for each. Each is a
# module launch.commands.<name> with `register(subparsers)`, imported only when its command runs
# (or its own --help is asked for): `evokernel verify` and `profile` must start where Ray, LanceDB
# and the embedding model are not installed. tests/launch/test_cli_lazy.py checks that these lines
# are the ones the modules register.
COMMAND_HELP = {
    "run": "run draft-and-refine episodes over a task suite",
    "verify": "verify a candidate kernel against a task",
    "profile": "time a candidate kernel against the eager and compiled baselines",
    "tasks": "load, fit and run every task of a suite",
    "memory": "inspect, seed, export and import the memory bank",
    "llm": "fetch and serve the offline default model",
    "report": "write summary.json and report.html for run folders",
    "export": "copy a run's kernels out (EvoKernel, KernelBench or CANN layout)",
    "doctor": "check torch, compilers, Ray, LanceDB, embeddings and the LLM endpoint",
    "config": "show the effective configuration (secrets redacted)",
}
COMMAND_MODULES = tuple(COMMAND_HELP)
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
    for assignment in [*(getattr(args, "set", None) or []), *(getattr(args, "set_after_command", None) or [])]:
        key, sep, raw = assignment.partition("=")
        if not sep or not key:
            raise UsageError(f"--set wants KEY=VALUE, got {assignment!r}")
        set_dotted(overrides, key.strip(), yaml.safe_load(raw) if raw else "")
    return overrides


def build_parser(commands: Iterable[str] | None = None) -> argparse.ArgumentParser:
    """The full parser for the subcommands in `commands` (default: every one), whose modules are
    imported here; every other subcommand is a stand-in that lists it in `--help` and accepts any
    arguments, so that `chosen_command` can find the command without importing anything."""
    real = set(COMMAND_MODULES if commands is None else commands)
    parser = argparse.ArgumentParser(
        prog="evokernel",
        description="Self-evolving kernel synthesis: draft, verify and refine kernels with a value-driven memory.",
    )
    parser.add_argument("--version", action="version", version=f"evokernel {__version__}")
    _add_common_options(parser)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.required = True
    registered = []
    for name in COMMAND_MODULES:
        if name in real:
            module = importlib.import_module(f"launch.commands.{name}")
            module.register(subparsers)
            registered.append(subparsers.choices[name])
        else:
            subparsers.add_parser(name, help=COMMAND_HELP[name], add_help=False)
    # The common options work after the subcommand too (`evokernel run --set k=v`); there they
    # default to nothing, so they never erase what was given before the subcommand.
    for subparser in registered:
        _add_common_options(subparser, suppress=True)
    return parser


def chosen_command(argv: Sequence[str] | None) -> str:
    """The subcommand `argv` names, found with stand-ins only (no command module is imported).
    `--help`, `--version` and a missing or unknown command end here, as argparse ends them."""
    namespace, _ = build_parser(commands=()).parse_known_args(argv)
    return namespace.command


def _add_common_options(parser: argparse.ArgumentParser, suppress: bool = False) -> None:
    group = parser.add_argument_group("common options") if suppress else parser
    default = {"default": argparse.SUPPRESS} if suppress else {}
    group.add_argument("--config", metavar="FILE", help="YAML settings file (also $EVOKERNEL_CONFIG)", **default)
    # A command's own --set list would replace the one given before the command (argparse copies a
    # subparser's values over its parent's): kept apart, both are read, the command's last
    group.add_argument("--set", action="append", metavar="KEY=VALUE", dest="set_after_command" if suppress else "set",
                       help="override any setting, e.g. memory.alpha=0.3", **default)
    group.add_argument("--log-json", dest=CONFIG_DEST_PREFIX + "log_json", action="store_const", const=True,
                       default=argparse.SUPPRESS, help="JSON logs (default when stderr is not a terminal)")
    group.add_argument("--log-level", dest=CONFIG_DEST_PREFIX + "log_level", default=argparse.SUPPRESS,
                       choices=["debug", "info", "warning", "error"])


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser(commands=(chosen_command(argv),))
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
    finally:
        if argv is None:  # the process's own command: its status is decided, and the interpreter's exit
            # (Ray's atexit shutdown among others) must not be cut to a signal's death by a late stop
            _note_late_stops()


def _note_late_stops() -> None:
    from launch.stop_shield import LateStops

    LateStops().ignore()



if __name__ == "__main__":
    # `python -m launch.cli`: run the imported module's main, not this __main__ copy's, so that the
    # UsageError the command modules raise (launch.cli.UsageError) is the one main catches.
    from launch.cli import main as _main

    sys.exit(_main())
