"""The offline default LLM: which model, how to serve it, and a server that lives for one run.

`local_llm_server(settings)` is what `evokernel run` uses when no endpoint is configured:
it fetches the model if needed, starts llama-cpp-python's OpenAI-compatible server on a free
loopback port, waits until `/v1/models` answers, yields the base URL, and stops the server
on exit (normal, exception or Ctrl-C). What makes the small model productive (threads,
context, temperature, token budget, candidate format) is data in `models.py`, not code.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import structlog

from launch.config import Settings
from launch.local_llm.config import LocalLLMConfig
from launch.local_llm.fetch import fetch_model, is_verified
from launch.local_llm.models import LocalModelSpec
from launch.local_llm.process import (
    LOOPBACK,
    LocalLLMError,
    LocalLLMServer,
    free_port,
    threads_of_running_servers,
)
from launch.local_llm.settings import operators_in_flight

log = structlog.get_logger("evokernel.llm.server")
INSTALL_HINT = "install it with `bash scripts/setup.sh local-llm` (or `pip install -e '.[local-llm]'`)"
# Top-level modules each server needs, checked before starting it for a clear message.
SERVER_REQUIREMENTS = {"llama_cpp.server": ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "starlette_context")}


def ensure_model(config: LocalLLMConfig, spec: LocalModelSpec | None = None) -> Path:
    """The GGUF file to serve: `model_path` as given, else the verified cached copy (fetched if missing)."""
    if config.model_path:
        path = Path(config.model_path).expanduser()
        if not path.is_file():
            raise LocalLLMError(f"local_llm.model_path {path} does not exist")
        return path
    return fetch_model(spec or config.spec(), config.cache_path(), config.pip_args)


def server_args(config: LocalLLMConfig, spec: LocalModelSpec, model_path: Path, port: int,
                harness_beside: bool = True, taken: int = 0) -> list[str]:
    """llama-cpp-python server flags (its ModelSettings/ServerSettings fields, checked on 0.3.36);
    `taken`: threads other model servers on this machine use."""
    threads = str(config.threads(harness_beside, taken))
    args = [
        "--model", str(model_path), "--model_alias", spec.name,
        "--host", LOOPBACK, "--port", str(port),
        "--n_threads", threads, "--n_threads_batch", threads,
        "--n_ctx", str(config.n_ctx or spec.n_ctx),
    ]
    if spec.chat_format:
        args += ["--chat_format", spec.chat_format]
    # The server's own default is true: logits of every prompt token, through the 152k-word
    # output layer, and copied into a numpy array. Nothing of ours reads them.
    args += ["--logits_all", str(config.logits_all).lower()]
    if config.prompt_cache_mb:
        args += ["--cache", "true", "--cache_type", "ram", "--cache_size", str(config.prompt_cache_mb << 20)]
    if config.seed is not None:
        args += ["--seed", str(config.seed)]
    if config.prompt_lookup_tokens:  # llama-cpp-python then keeps every logit regardless (logits_all)
        args += ["--draft_model", "prompt-lookup-decoding", "--draft_model_num_pred_tokens", str(config.prompt_lookup_tokens)]
    return args


def _missing_server_modules(config: LocalLLMConfig) -> list[str]:
    required = SERVER_REQUIREMENTS.get(config.server_module, (config.server_module.split(".")[0],))
    return [name for name in required if importlib.util.find_spec(name) is None]


def prepare_server(config: LocalLLMConfig, port: int | None = None, harness_beside: bool = True) -> LocalLLMServer:
    """Check the server is installed, make sure the model is here, and build (not start) the server.
    `harness_beside`: kernels are evaluated while the model works (see LocalLLMConfig.threads)."""
    missing = _missing_server_modules(config)
    if missing:
        raise LocalLLMError(f"the local LLM server ({config.server_module}) is not installed (missing {', '.join(missing)}): {INSTALL_HINT}")
    spec = config.spec()
    model_path = ensure_model(config, spec)
    port = port or config.port or free_port()
    others = [] if config.n_threads else threads_of_running_servers(config.server_module)
    args = server_args(config, spec, model_path, port, harness_beside, sum(others))
    if others:
        log.warning("llm.server.threads_shared", other_servers=len(others), their_threads=sum(others),
                    threads=int(args[args.index("--n_threads") + 1]),
                    hint="another run's model server is busy on this machine: this one takes the cores it leaves; "
                         "set local_llm.n_threads on each run for an even split")
    return LocalLLMServer(config.server_module, args, port, config.startup_timeout_s, model=spec.name)


def local_llm_status(config: LocalLLMConfig) -> str:
    """One line for `evokernel doctor`: is the server installed, is the model here?"""
    missing = _missing_server_modules(config)
    server = f"server not installed ({INSTALL_HINT})" if missing else f"server {config.server_module} installed"
    if config.model_path:
        return f"{server}; model {config.model_path} (given)"
    spec = config.spec()
    path = config.cache_path() / spec.file_name
    model = f"model {path} verified" if is_verified(path, spec) else f"model not fetched (evokernel llm fetch, {spec.size / 1e9:.1f} GB)"
    return f"{server}; {model}; {config.threads()} threads"


@contextmanager
def local_llm_server(settings: Settings, one_operator_at_a_time: bool = False) -> Iterator[str]:
    """Serve the local model for the duration of the block; yields its OpenAI base URL.
    `one_operator_at_a_time`: the campaign runs in this process (`--no-ray`, the learning
    benchmark) or one operator in flight, so no kernel is evaluated while the model works."""
    sequential = one_operator_at_a_time or operators_in_flight(settings) == 1
    server = prepare_server(settings.local_llm, harness_beside=not sequential)
    try:
        base_url = server.start()
        server.keep_alive()
        yield base_url
    finally:
        server.close()
