"""What the learning benchmark does around its run: the settings from the command line, the
model that answers (an endpoint, or the local model served for the whole benchmark) and its
identity, the suite as plan.json records it, and the one interruptible run that the same
command, run again, resumes from the results folder (every step skips what it finished; a
published run is resumed or re-analysed from its archive, bench/learning/archive.py)."""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from bench.learning.publish import REPOSITORY, file_sha256


def build_settings(args: argparse.Namespace):
    from launch.cli import UsageError, config_overrides
    from launch.config import load_settings

    namespace = argparse.Namespace(set=args.set)
    try:
        overrides = config_overrides(namespace)
    except UsageError as exc:
        raise SystemExit(f"bench.learning: {exc}") from None
    llm = overrides.setdefault("llm", {})
    if args.llm_base_url:
        llm["base_url"] = args.llm_base_url
    if args.llm_model:
        llm["model"] = args.llm_model
    overrides.setdefault("memory", {})["seed"] = args.seed
    llm.setdefault("seed", args.seed)  # the learning pass's sampling seeds (an evaluation pass sets its own)
    return load_settings(None, overrides)


def bench_settings(args: argparse.Namespace, load_proof: list[str] | None = None):
    """The benchmark's settings: the kernel format in both domains (plain C; Ascend C on the
    twin), as the local model's own settings say (an endpoint would otherwise get `auto`), and
    `load_proof` (plan.LOAD_PROOF where the design asks for it); a --set given later wins.
    Refused when the backend cannot run here."""
    from launch.logging import configure_logging
    from npu_pool.backends import backend_status

    available, why = backend_status(args.backend)
    if not available:
        raise SystemExit(f"bench.learning: backend {args.backend} cannot run here: {why}")
    args.set = [f"harness.backend={args.backend}", "llm.candidate_format=kernel", *(load_proof or []), *args.set]
    settings = build_settings(args)
    configure_logging(settings.log_json, settings.log_level)  # one line per attempt: progress
    return settings


def portable(path: Path) -> str:
    """The suite as recorded in plan.json: relative to the repository when inside it, so a
    results folder resumes on another checkout."""
    try:
        return str(path.relative_to(REPOSITORY))
    except ValueError:
        return str(path)


def with_llm(settings, stack: ExitStack) -> tuple[Any, dict[str, Any]]:
    """The endpoint given, or the local model served for the whole benchmark (one server, every arm)."""
    if settings.llm.base_url:
        return settings, model_meta(settings)
    from launch.local_llm.process import LocalLLMError
    from launch.local_llm.server import local_llm_server
    from launch.local_llm.settings import local_llm_settings

    try:
        base_url = stack.enter_context(local_llm_server(settings, one_operator_at_a_time=True))
    except LocalLLMError as exc:
        raise SystemExit(f"bench.learning: {exc}\n  or pass --llm-base-url URL") from None
    return local_llm_settings(settings, base_url), model_meta(settings)


def model_meta(settings) -> dict[str, Any]:
    """Which model answered: the endpoint's name, or the local model and its file's sha256."""
    if settings.llm.base_url:
        return {"name": settings.llm.model, "endpoint": settings.llm.base_url, "gguf_sha256": None}
    from launch.local_llm.fetch import is_verified

    config = settings.local_llm
    spec = config.spec()
    if config.model_path:
        sha = file_sha256(Path(config.model_path).expanduser())
    else:
        path = config.cache_path() / spec.file_name
        sha = spec.sha256 if is_verified(path, spec) else (file_sha256(path) if path.is_file() else None)
    return {"name": spec.name, "endpoint": "local (llama-cpp-python)", "gguf_sha256": sha}


def run_resumable(label: str, out: Path, settings, work: Callable[[Any, dict[str, Any]], dict[str, Any]],
                  stops: tuple[type[Exception], ...]) -> int:
    """`work(settings, model)` with the benchmark's model answering; SIGTERM stops it as Ctrl-C
    does. Interrupted (exit 130) or stopped by one of `stops` (exit 1), it says how to go on: the
    results folder `out` holds the state. Done, it prints the work's JSON line with wall_s (exit 0)."""
    previous = signal.signal(signal.SIGTERM, _interrupt)
    started = time.perf_counter()
    try:
        with ExitStack() as stack:
            settings, model = with_llm(settings, stack)
            line = work(settings, model)
    except KeyboardInterrupt:
        print(f"[{label}] interrupted: run the same command again to resume ({out})", file=sys.stderr)
        return 130
    except stops as exc:  # the state is kept: say how to go on
        again = "" if getattr(exc, "final", False) else f"\n  run the same command again to resume ({out})"
        print(f"[{label}] stopped: {exc}{again}", file=sys.stderr)
        return 1
    finally:
        signal.signal(signal.SIGTERM, previous)
    line["wall_s"] = round(time.perf_counter() - started, 1)
    print(json.dumps(line))
    return 0


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt
