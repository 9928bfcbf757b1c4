"""Settings of the agent half: the LLM endpoint, the prompts and the episode budgets."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr


class LLMConfig(BaseModel):
    """An OpenAI-compatible chat endpoint. No base URL means: start the local model."""

    model_config = ConfigDict(extra="forbid")

    base_url: str | None = Field(None, description="OpenAI-compatible base URL, e.g. https://api.openai.com/v1")
    model: str = Field("qwen2.5-coder-1.5b-instruct", description="model name sent to the endpoint")
    api_key: SecretStr | None = Field(None, description="API key; falls back to OPENAI_API_KEY")
    timeout_s: float = Field(120.0, gt=0, description="deadline of one request try, whole reply included; a "
                             "silent server (its /models does not answer either) costs one try, about timeout_s + 5 s")
    max_retries: int = Field(5, ge=0, description="retries on 429, 5xx, timeouts, connection errors")
    endpoint_wait_s: float = Field(300.0, ge=0, description="a campaign whose endpoint stops answering through all "
                                   "retries pauses this long for it to come back, then stops (partial results kept)")
    backoff_base_s: float = Field(1.0, ge=0, description="first retry delay; doubles each retry, with jitter")
    backoff_max_s: float = Field(60.0, ge=0, description="cap of one retry delay (also caps Retry-After)")
    max_concurrency: int = Field(4, ge=1, description="requests in flight per client")
    temperature: float = Field(0.7, ge=0, le=2)
    max_tokens: int = Field(2048, ge=16, description="completion tokens per request")
    lesson_max_tokens: int = Field(200, ge=16, description="completion tokens of a model-written lesson")
    lesson_max_chars: int = Field(600, ge=80, description="a model-written lesson is cut to this length")
    review_max_tokens: int = Field(400, ge=16, description="completion tokens of a review of a flagged attempt")
    candidate_format: Literal["auto", "kernel", "modelnew"] = Field(
        "auto", description="what the LLM writes: a C kernel function, or a full ModelNew file; "
        "auto: the kernel function for a small model (small_model), ModelNew otherwise"
    )
    small_model: bool = Field(
        False, description="the model has a few billion parameters (the local default has 1.5B): candidate_format "
        "auto gives it the kernel format, the only one such models get right; the local model's settings turn it on"
    )
    prompt_char_budget: int = Field(
        16000, ge=2000, description="characters of one prompt (all turns); longer sections are cut with a marker"
    )
    one_shot_example: bool = Field(True, description="show a worked example as an earlier chat turn")
    repeat_retries: int = Field(
        1, ge=0, description="a reply that repeats an earlier attempt's code is asked again this many times, "
        "told so and at a higher temperature"
    )
    repeat_temperature_step: float = Field(0.3, ge=0, description="temperature added for each such retry")
    prompt_style: Literal["full", "plain"] | None = Field(
        None, description="system prompt: full (performance rules) or plain (plain loops, for small models); "
        "unset: full, or the local model's own choice"
    )
    sampling_seeds: bool = Field(
        True, description="send each draft and refinement request a sampling seed of its own (the OpenAI API's "
        "`seed`) and record it with the attempt (attempts.jsonl `sampling_seed`): an endpoint that honours seeds "
        "(llama.cpp, vLLM) gives the same reply to the same prompt and seed. Off for an endpoint that refuses the field"
    )
    seed: int | None = Field(
        None, ge=0, lt=2**32, description="where the requests' seeds come from: one seed gives each draw (stage, "
        "operator, iteration, and each repeat asked again) the same request seed run after run, resumed or not (a "
        "benchmark pass sets its own); unset: fresh ones each run"
    )
    exemplar_as_example: bool | None = Field(
        None, description="drafting: show the best-ranked feasible kernel of another operator as the worked example "
        "(its task, then its code) instead of the generic one; small models copy what the example shows, so this "
        "is what makes them use memory. Unset: off, or the local model's own choice"
    )


class EpisodeConfig(BaseModel):
    """Budgets and exploration of one operator's draft-then-refine episode."""

    model_config = ConfigDict(extra="forbid")

    iterations: int = Field(30, ge=1, description="attempts per operator (draft + refine)")
    max_tokens_per_operator: int | None = Field(None, ge=1, description="LLM token budget per operator")
    max_wall_s_per_operator: float | None = Field(None, gt=0, description="wall-time budget per operator")
    start_point_epsilon: float = Field(0.1, ge=0, le=1, description="epsilon-greedy start-point choice")
    draft_kinds: list[Literal["experience", "trace", "practice"]] = Field(
        default_factory=lambda: ["experience", "trace", "practice"], min_length=1,
        description="memory item kinds a draft's recall draws from (api items come by name, apart)")
    refine_kinds: list[Literal["experience", "trace", "practice"]] = Field(
        default_factory=lambda: ["trace", "practice", "experience"], min_length=1,
        description="memory item kinds a refinement's recall draws from")
    retry_shows_code: bool = Field(
        False, description="a retry after a failed draft also shows the failing code (off: a retry is a fresh draft of "
        "what the decision chooses in the retry context, with the failure's gate, reason and first detail lines only; "
        "at the local model's size re-showing the code never recovered, issue 64)")
    retry_detail_lines: int = Field(
        4, ge=0, description="lines of the failure's details (the first compile errors, the first mismatches) a retry shows")
    fresh_drafts: int = Field(
        1, ge=1, description="an operator's first drafts that are fresh draws, each from its start (start_from_rung, "
        "start_from) with no earlier attempt shown, even after a feasible one; refining follows. The learning "
        "benchmark's v6 pass drafts each curriculum operator fresh 4 times (issue 64)")
    start_from: str | None = Field(
        None, description="options an operator's first draft shows whatever the memory's values say, in preference "
        "order, comma-separated (e.g. `own_kernel_other_backend,rung`): the first the bank offers for the task; its "
        "verdict counts for that option. start_from_rung is `rung` (the benchmarks' pilots use this)")
    cross_backend_kernels: bool = Field(
        False, description="an Ascend C draft may be shown the operator's own verified C kernel from the bank (an option "
        "of the memory's decision, own_kernel_other_backend: the formula in the language the model knows; issue 64). "
        "Off until a pilot shows it pays (docs/memory.md)")
    start_from_rung: bool = Field(
        False, description="an operator's first draft shows its family's first rung (the simplest correct kernel, where its "
        "signature has the task's shape) whatever the memory's values say: the learning pass's way to bank kernels the "
        "model can copy; the draft's verdict counts for the rung option (docs/memory.md, the ladder)")
    review_flagged: bool = Field(True, description="LLM review of attempts flagged by the harness")
    lessons: bool | None = Field(
        None, description="ask the LLM for a lesson after failed drafts and faster refinements (experience items); "
        "unset: on, or the local model's own choice"
    )
    max_children_in_prompt: int = Field(3, ge=0, description="start point's earlier children shown when refining")
    climb_merged: Literal["propose", "show"] = Field(
        "propose", description="where the refine decision shows the ub_scalar rung with the start kernel's formula "
        "carried in (actors/climb_merge.py): propose evaluates that kernel as the refinement itself, no model call "
        "(the attempt says proposed_by=system); show puts it in the prompt for the model to copy (the 2026-12-06 "
        "climb run: 6 of 20 copies lost a constant or a flag pair)")
    # Stops (actors/stops.py, issue 67); the defaults are measured: bench/budget_defaults.py
    plateau_refinements: int = Field(
        4, ge=0, description="refining stops after this many refinements in a row gained no more than plateau_gain "
        "over the best kernel before each (0: never)")
    plateau_gain: float = Field(
        0.10, ge=0, description="the smallest gain over the best latency (best/new - 1) that counts as progress")
    uncompiled_drafts: int = Field(
        4, ge=0, description="drafting stops after this many drafts of which none compiled, unless the memory offers "
        "content the operator's drafts have not shown (0: never)")
