"""Typed messages of the agent: what the episode sends the drafter and refiner, what it records.

Requests carry plain, prompt-ready fields (not npu_pool or memory_actor types), so the
drafter and refiner depend only on this module and stay cheap to ship between Ray actors.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Literal

from pydantic import AliasChoices, BaseModel, Field, field_validator, model_validator

from actors.families import dominant_family
from actors.signature_shape import signature_shape

# Defined by the harness (what it can judge), re-exported for the agent's messages.
from npu_pool.verdict import CandidateFormat as CandidateFormat
from npu_pool.verdict import StageProfile

Stage = Literal["draft", "refine"]


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class TaskBrief(BaseModel):
    """What the LLM is told about the operator."""

    task_id: str
    backend: str
    reference_source: str
    sizes: dict[str, int] = Field(default_factory=dict)
    signature: str | None = Field(None, description="the C entry point, kernel format only")
    candidate_format: CandidateFormat = "kernel"
    prompt_family: str | None = Field(None, description="whose prompt files the kernel format uses (system_kernel_<family>, "
                                      "example_kernel_<family>): 'ascendc' on the npu and npu-twin backends; None: the backend's")
    family: str = Field("", description="the operator's dominant family (actors/families.py), read from the reference "
                        "when the brief is built; what memory may show it is scoped by it")
    shape: str = Field("", description="the signature's shape (actors/signature_shape.py), '' without a signature")
    example: str | None = Field(None, description="the family's verified worked example (its api item name) where a "
                                "prompt of this task may show it: its signature maps onto the task's (actors/briefing.py)")
    rung: str | None = Field(None, description="the family's first rung (its api item name, issue 54) where a prompt "
                             "of this task may show it: its signature maps onto the task's (actors/briefing.py)")

    @model_validator(mode="after")
    def _facts_of_the_task(self) -> TaskBrief:
        """The task's family and signature shape, decided once, when the brief is built (every reader,
        the context, the slot request, the retrieval's scope and the lessons, takes them from here):
        actors/briefing.task_brief sets them; a brief built otherwise (a worked example's, a test's,
        a record written before) gets them from its own reference and signature."""
        if not self.family:
            self.family = dominant_family(self.reference_source)
        if not self.shape:
            self.shape = signature_shape(self.signature)
        return self


class ContextItem(BaseModel):
    """A memory item as a prompt shows it."""

    id: str
    kind: str
    summary: str = ""
    content: str = ""
    task: str | None = Field(None, description="the operator it came from")
    q: float | None = Field(None, description="its value for this stage when it was retrieved (provenance)")
    core: bool = Field(False, description="a core API item of the backend: never cut by the prompt budget")
    failed: bool = Field(False, description="a failed attempt (a refine child): shown fenced, marked, with its reason")
    reason: str = Field("", description="why it failed, when it did")


class Exemplar(BaseModel):
    """A feasible kernel of another operator, with that operator's brief: small models shown it
    as the worked example (its task, then its code) use it; in the user turn they ignore it."""

    item_id: str
    task: TaskBrief
    code: str


class ShownItem(BaseModel):
    """Provenance: one memory item that reached an attempt's prompt, and its value then."""

    id: str
    kind: str
    task: str | None = None
    q: float | None = Field(None, description="Q of the attempt's stage when it was retrieved")
    role: Literal["context", "api", "pinned", "example", "child", "start", "climb"] = "context"
    renamed: dict[str, str] = Field(default_factory=dict, description="shown in the task's own terms "
                                    "(actors/renaming.py): the item's names -> the task's; the credit is the item's")

    @field_validator("role", mode="before")
    @classmethod
    def _pinned_was_template(cls, role: object) -> object:
        return "pinned" if role == "template" else role  # attempts recorded before 2026-11-29


class Feedback(BaseModel):
    """The verdict of an earlier attempt, as the next prompt shows it."""

    gate: str
    reason: str
    details: str = ""
    code: str | None = None


_DRAW = ("the attempt's iteration in its episode: with llm.seed set, the request's sampling seed is a function of "
         "the seed, the stage, the task and this number (actors/worker.py), so a resumed run asks a draw again "
         "with the seed it had; none: the worker's own sequence of seeds")


class DraftRequest(BaseModel):
    task: TaskBrief
    context: list[ContextItem] = Field(default_factory=list)
    api: list[ContextItem] = Field(default_factory=list)
    previous: Feedback | None = None
    exemplar: Exemplar | None = Field(None, description="a feasible kernel of another operator, for llm.exemplar_as_example")
    pinned: ContextItem | None = Field(None, validation_alias=AliasChoices("pinned", "template"),  # recorded: template
                                       description="the family's verified worked example when the memory's decision "
                                       "chose it and the prompt cannot hold it as the worked example: pinned before "
                                       "the ranked items, never cut")
    avoid: list[str] = Field(default_factory=list, description="code_fingerprint of this operator's earlier attempts")
    draw: int | None = Field(None, description=_DRAW)


class StartPoint(BaseModel):
    """A feasible kernel the refiner starts from."""

    id: str
    code: str
    latency_ms: float
    speedup_vs_eager: float | None = None
    profile: str = Field("", description="bound, throughput and the profiler's hints, as text")


class ClimbRung(BaseModel):
    """The next rung up of the ladder, as a refinement is shown it (issue 65, actors/climb.py): a
    verified kernel of another task of the family and shape, one step faster, in the task's names."""

    item_id: str
    rung: str = Field(..., description="ub_scalar, vector or double_buffer")
    task_id: str = Field(..., description="the rung's own task")
    summary: str = ""
    reference: str = Field(..., description="the rung's task: what its kernel computes")
    code: str = Field(..., description="the rung's kernel, renamed into the task's terms")
    formula: str = Field("", description="the current kernel's computation, to carry over")
    merged: bool = Field(False, description="code is the rung with the current kernel's formula already carried "
                         "into it (actors/climb_merge.py) or lowered into its vector instructions "
                         "(actors/climb_vectorize.py)")
    renamed: dict[str, str] = Field(default_factory=dict)


class RefineRequest(BaseModel):
    task: TaskBrief
    start: StartPoint
    best_latency_ms: float
    climb: ClimbRung | None = Field(None, description="the next rung up, where the refine decision chose to show it")
    context: list[ContextItem] = Field(default_factory=list)
    api: list[ContextItem] = Field(default_factory=list)
    children: list[ContextItem] = Field(default_factory=list)
    avoid: list[str] = Field(default_factory=list, description="code_fingerprint of this operator's earlier attempts")
    draw: int | None = Field(None, description=_DRAW)


class Proposal(BaseModel):
    """A drafter's or refiner's answer: code, or why there is none."""

    code: str | None = None
    reason: str | None = Field(None, description="why no code: empty, truncated, refused, no code block")
    llm_error: str | None = Field(None, description="the request itself failed (retries exhausted, rejected)")
    finish_reason: str | None = None
    tokens_prompt: int = 0
    tokens_completion: int = 0
    prompt_truncated: bool = False
    shown_ids: list[str] = Field(default_factory=list, description="the memory items that reached the prompt "
                                 "after truncation and deduplication: exactly what the attempt's credit goes to")
    example_id: str | None = Field(None, description="the item shown as the worked example (exemplar_as_example)")
    sampling_seed: int | None = Field(None, description="the seed the request was sent with (the last ask's where a "
                                      "repeat was asked again); none when llm.sampling_seeds is off")
    proposed_by: Literal["model", "system"] = Field(
        "model", description="system: no model call, the code is the system's own transformation of a model-written "
        "kernel (the climb's merged rung, actors/climb_merge.py)")
    reply: str | None = Field(None, description="the reply's text where no code could be taken from it (kept in "
                              "RUN_DIR/replies/, launch/reply_files.py)")


class LessonRequest(BaseModel):
    task: TaskBrief
    stage: Stage
    code: str
    outcome: str
    improved: bool = Field(False, description="a faster kernel (ask what made it faster), else a failure")
    start_code: str | None = Field(None, description="the start point a refinement began from")


class Lesson(BaseModel):
    text: str | None = None
    tokens_prompt: int = 0
    tokens_completion: int = 0


class ReviewRequest(BaseModel):
    task: TaskBrief
    code: str
    flags: list[str]
    measurements: str = ""


class Review(BaseModel):
    """The LLM's second opinion on a flagged attempt."""

    verdict: Literal["legitimate", "hack", "unsure"]
    reasoning: str = ""
    tokens_prompt: int = 0
    tokens_completion: int = 0


class Attempt(BaseModel):
    """One iteration of an episode: one line of attempts.jsonl."""

    run_id: str
    task: str
    iteration: int
    stage: Stage
    attempt_id: str | None = Field(None, description="the trace item's id; None when no code was produced")
    parent_id: str | None = None
    retrieval_id: str | None = None
    retrieved_item_ids: list[str] = Field(default_factory=list)
    candidate_format: CandidateFormat = "kernel"
    feasible: bool = False
    gate: str = Field(..., description="hack, compile, correctness, runtime, ok, review, no_code or llm")
    category: str = ""
    reason: str = ""
    latency_ms: float | None = None
    speedup_vs_eager: float | None = None
    reward: float | None = Field(None, description="raw reward sent to memory; None when values were not updated")
    tokens_prompt: int = 0
    tokens_completion: int = 0
    sampling_seed: int | None = Field(None, description="the draw's sampling seed (llm.sampling_seeds): a draft asked "
                                      "again with its prompt and this seed is the same draft where the endpoint honours it")
    wall_s: float = 0.0
    flags: list[str] = Field(default_factory=list)
    review: Review | None = None
    lesson_id: str | None = None
    shown: list[ShownItem] = Field(default_factory=list, description="the memory items its prompt showed")
    proposed_by: Literal["model", "system"] = Field(
        "model", description="who wrote the code: the model, or the system from a model-written kernel (Proposal)")
    timestamp: str = Field(default_factory=utc_now)
    # The source of a feasible attempt, for the run folder's kernels/ (launch.kernel_files). It
    # travels with the attempt to the run recorder but is left out of attempts.jsonl (exclude).
    code: str | None = Field(None, exclude=True, description="the candidate source as verified (feasible only)")
    # The model's reply where no code could be taken from it, for RUN_DIR/replies/ (launch.reply_files);
    # like `code`, it travels to the run recorder and stays out of attempts.jsonl, which names the file.
    reply: str | None = Field(None, exclude=True, description="the reply's text (no_code attempts only)")
    reply_file: str | None = Field(None, description="where the reply of a no_code attempt is kept, relative to RUN_DIR")
    stages: StageProfile | None = Field(None, description="a feasible attempt's modelled profile on the Ascend C twin: "
                                        "time per stage, blocks and cores, double buffering (issue 65)")


class EpisodeResult(BaseModel):
    """One operator's outcome: one entry of summary.json's `operators`."""

    task: str
    feasible: bool = False
    best_latency_ms: float | None = None
    speedup_vs_eager: float | None = None
    attempts: int = 0
    first_feasible_iteration: int | None = None
    tokens: int = 0
    first_feasible_latency_ms: float | None = None
    speedup_best_over_first: float | None = None
    stopped_by: str = Field("iterations", description="iterations, tokens, wall_time, plateau, no_compile (actors/stops.py), "
                            "budget (the run's time budget ran out first: a resume continues it) or error")
    stop_detail: str | None = Field(None, description="why a stop rule (plateau, no_compile) ended it, in one line")
    error: str | None = None

    def record(self, attempt: Attempt) -> None:
        """Fold one finished attempt into the operator's figures."""
        self.attempts = attempt.iteration
        self.tokens += attempt.tokens_prompt + attempt.tokens_completion
        if not attempt.feasible or attempt.latency_ms is None:
            return
        if self.first_feasible_iteration is None:
            self.first_feasible_iteration = attempt.iteration
            self.first_feasible_latency_ms = attempt.latency_ms
        if self.best_latency_ms is None or attempt.latency_ms < self.best_latency_ms:
            self.best_latency_ms = attempt.latency_ms
            self.speedup_vs_eager = attempt.speedup_vs_eager
        self.feasible = True
        self.speedup_best_over_first = self.first_feasible_latency_ms / self.best_latency_ms
