"""One operator's episode: draft until feasible, then refine from value-chosen start points.

DESIGN.md section 2. Every iteration: retrieve context, ask the drafter or refiner, verify
(and profile) the candidate, reward the context in memory, store the attempt as a trace
item and, when it teaches something, a lesson as an experience item. Rewards sent to memory
are raw: the memory normalises refine rewards itself.
"""

from __future__ import annotations

import math
import random
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import structlog

from actors.code_extraction import code_fingerprint
from actors.config import EpisodeConfig
from actors.context import (
    context_item,
    credited_ids,
    showable,
    shown_items,
    slot_contents,
    slot_outcome,
    slot_request,
    trace_tags,
)
from actors.errors import error_line
from actors.lessons import Failure, LessonWriter
from actors.llm_client import LLMAuthError, LLMModelNotFound, LLMUnavailable, LLMUnreachable
from actors.messages import (
    Attempt,
    DraftRequest,
    EpisodeResult,
    Feedback,
    Proposal,
    RefineRequest,
    Review,
    ReviewRequest,
    ShownItem,
    Stage,
    StartPoint,
    TaskBrief,
)
from actors.ports import EvaluatorPort, MemoryPort, WorkerPort
from actors.prompt_sections import profile_text
from memory_actor.items import ItemVerdict, MemoryItem
from memory_actor.messages import Retrieval, RetrievalRequest, ValueUpdate
from memory_actor.slots import SlotOutcome
from npu_pool.verdict import Candidate, Evaluation, ProfileReport

log = structlog.get_logger("evokernel.episode")

FATAL_LLM_ERRORS = (LLMAuthError, LLMModelNotFound, LLMUnreachable)
# The endpoint failed through all its retries: the operator stops as infrastructure (the
# attempt in flight is not recorded, nothing is rewarded); `evokernel run --resume` redoes it.
INFRA_LLM_ERRORS = (LLMUnavailable,)


def refine_reward(best_ms: float, new_ms: float) -> float:
    """tanh(log b - log l): positive when faster than the best so far, bounded in (-1, 1)."""
    return math.tanh(math.log(best_ms) - math.log(new_ms))


@dataclass
class _Feasible:
    """A member of the start-point set P."""

    id: str
    code: str
    latency_ms: float
    speedup: float | None
    profile: ProfileReport | None


@dataclass
class _Seen:
    """An attempt already evaluated in this episode, by its code_fingerprint."""

    iteration: int
    gate: str
    reason: str
    details: str


@dataclass
class _Outcome:
    """What one iteration produced, before it becomes an Attempt."""

    stage: Stage
    proposal: Proposal
    retrieval: Retrieval | None
    parent_id: str | None = None
    start_code: str | None = None
    evaluation: Evaluation | None = None
    feasible: bool = False
    gate: str = ""
    category: str = ""
    reason: str = ""
    reward: float | None = None
    attempt_id: str | None = None
    review: Review | None = None
    lesson_id: str | None = None
    repeat_of: _Seen | None = None
    shown: list[ShownItem] = field(default_factory=list)  # what the prompt showed: provenance and credit
    static_ids: set[str] = field(default_factory=set)  # the static brief's items: shown to every arm, not credited
    slot: SlotOutcome | None = None  # what the worked-example slot showed: credited with the verdict
    extra_tokens: list[int] = field(default_factory=lambda: [0, 0])

    @property
    def credited(self) -> list[str]:
        return credited_ids(self.shown, self.static_ids)


class Episode:
    """The state machine of one operator; the same code in-process and over Ray actors."""

    def __init__(
        self,
        *,
        task: Any,
        brief: TaskBrief,
        memory: MemoryPort,
        drafter: WorkerPort,
        refiner: WorkerPort,
        evaluator: EvaluatorPort,
        config: EpisodeConfig,
        run_id: str,
        items_per_prompt: int | None = None,
        on_attempt: Callable[[Attempt], None] | None = None,
        rng: random.Random | None = None,
    ):
        self.task, self.brief = task, brief
        self.memory, self.drafter, self.refiner, self.evaluator = memory, drafter, refiner, evaluator
        self.config = config
        self.run_id = run_id
        self.n = items_per_prompt
        self.on_attempt = on_attempt
        self.rng = rng or random.Random()
        self.log = log.bind(task=brief.task_id, run_id=run_id)
        self.pool: list[_Feasible] = []
        self.best_ms: float | None = None
        self.previous: Feedback | None = None
        self.seen: dict[str, _Seen] = {}  # code_fingerprint -> its verdict: repeats are not evaluated again
        self.attempts: list[Attempt] = []
        self.result = EpisodeResult(task=brief.task_id)
        self.lessons = LessonWriter(memory, brief, run_id)

    # -- the loop ---------------------------------------------------------------------------

    async def run(self) -> EpisodeResult:
        started = time.monotonic()
        try:
            for iteration in range(1, self.config.iterations + 1):
                stop = self._budget_spent(started)
                if stop:
                    self.result.stopped_by = stop
                    break
                t0 = time.monotonic()
                outcome = await (self._refine() if self.pool else self._draft())
                self._record(iteration, outcome, time.monotonic() - t0)
        except (*FATAL_LLM_ERRORS, *INFRA_LLM_ERRORS):
            raise
        except Exception as exc:  # one broken operator must not end the campaign
            self.log.exception("episode_failed")  # the traceback goes to the log; the result gets one line
            self.result.error = error_line(exc)
            self.result.stopped_by = "error"
        return self.result

    def _budget_spent(self, started: float) -> str | None:
        cap = self.config.max_tokens_per_operator
        if cap is not None and self.result.tokens >= cap:
            return "tokens"
        wall = self.config.max_wall_s_per_operator
        if wall is not None and time.monotonic() - started >= wall:
            return "wall_time"
        return None

    # -- the two stages ---------------------------------------------------------------------

    async def _draft(self) -> _Outcome:
        retrieval = await self._retrieve("draft", self._task_query(), list(self.config.draft_kinds),
                                         slot=slot_request(self.brief, retry=self.previous is not None))
        exemplar, template = slot_contents(retrieval, self.brief, getattr(self.task, "path", None))
        in_slot = retrieval.slot_item if retrieval.slot_item is not None and showable(
            retrieval.slot_item, self.brief.candidate_format) else None
        items = [item for item in retrieval.items if showable(item, self.brief.candidate_format)
                 and (in_slot is None or item.id != in_slot.id)]
        if in_slot is not None and template is None:
            # The slot's kernel: the worked example, or (a model not shown kernels as examples,
            # no source for its task) the first context item. The prompt keeps it in one place.
            items.insert(0, in_slot)
        request = DraftRequest(task=self.brief, context=[context_item(i, "draft") for i in items],
                               api=[context_item(i, "draft") for i in retrieval.api_items], previous=self.previous,
                               exemplar=exemplar, template=context_item(template, "draft") if template else None,
                               avoid=list(self.seen))
        proposal = await self.drafter.propose(request)
        known = ({i.id: (i, "context") for i in items} | {i.id: (i, "api") for i in retrieval.api_items}
                 | ({in_slot.id: (in_slot, "template" if template else "context")} if in_slot else {}))
        outcome = _Outcome("draft", proposal, retrieval,
                           shown=shown_items(proposal.shown_ids, known, "draft", proposal.example_id),
                           static_ids={i.id for i in retrieval.api_items if "core" in i.tags},
                           slot=slot_outcome(retrieval, self.brief.backend, proposal.shown_ids))
        await self._judge(outcome, self.drafter)
        if outcome.proposal.llm_error is None and outcome.gate != "infra":
            outcome.reward = 1.0 if outcome.feasible else -1.0
            await self._update(outcome)
        if outcome.feasible:
            self._admit(outcome)
        elif outcome.repeat_of is not None:  # show the repeated attempt's own verdict again
            earlier = outcome.repeat_of
            self.previous = Feedback(gate=earlier.gate, reason=earlier.reason, code=outcome.proposal.code,
                                     details=earlier.details)
        elif outcome.gate not in ("llm", "infra"):
            self.previous = Feedback(gate=outcome.gate, reason=outcome.reason, code=outcome.proposal.code,
                                     details=outcome.evaluation.verdict.details if outcome.evaluation else "")
        return outcome

    async def _refine(self) -> _Outcome:
        start, start_item = await self._choose_start_point()
        retrieval = await self._retrieve("refine", f"{self._task_query()}\n{start.code}",
                                         list(self.config.refine_kinds))
        shown = self.config.max_children_in_prompt
        # Newest first: the prompt budget drops the last listed, and old variants say least.
        children = [c for c in await self.memory.children(start.id) if c.kind == "trace"][-shown:][::-1] if shown else []
        # The start point and its children have their own sections: do not show them twice.
        elsewhere = {start.id, *(c.id for c in children)}
        items = [i for i in retrieval.items if i.id not in elsewhere and showable(i, self.brief.candidate_format)]
        assert self.best_ms is not None
        best_before = self.best_ms
        request = RefineRequest(
            task=self.brief,
            start=StartPoint(id=start.id, code=start.code, latency_ms=start.latency_ms,
                             speedup_vs_eager=start.speedup, profile=profile_text(start.profile)),
            best_latency_ms=best_before, api=[context_item(i, "refine") for i in retrieval.api_items],
            context=[context_item(i, "refine") for i in items],
            children=[context_item(c, "refine") for c in children], avoid=list(self.seen),
        )
        proposal = await self.refiner.propose(request)
        known = ({i.id: (i, "context") for i in items} | {i.id: (i, "api") for i in retrieval.api_items}
                 | {c.id: (c, "child") for c in children})
        static_ids = {i.id for i in retrieval.api_items if "core" in i.tags}
        start_record = ShownItem(id=start.id, kind="trace", task=self.brief.task_id, role="start",
                                 q=start_item.q_refine if start_item is not None else None)
        outcome = _Outcome("refine", proposal, retrieval, parent_id=start.id, start_code=start.code,
                           shown=[start_record, *shown_items(proposal.shown_ids, known, "refine", None)],
                           static_ids=static_ids)
        await self._judge(outcome, self.refiner, improved_over=best_before)
        if outcome.proposal.llm_error is None and outcome.gate != "infra":
            latency = self._latency(outcome)
            outcome.reward = refine_reward(best_before, latency) if outcome.feasible and latency else -1.0
            await self._update(outcome)
        if outcome.feasible:
            self._admit(outcome)
        return outcome

    async def _choose_start_point(self) -> tuple[_Feasible, MemoryItem | None]:
        """Epsilon-greedy on q_refine; ties go to the faster kernel. Returns its item too (its
        value then is part of the attempt's provenance)."""
        if len(self.pool) == 1 or self.rng.random() < self.config.start_point_epsilon:
            chosen = self.rng.choice(self.pool)
            return chosen, await self.memory.get(chosen.id)
        items = [await self.memory.get(p.id) for p in self.pool]
        q = [(i.q_refine if i is not None and i.q_refine is not None else 0.0) for i in items]
        _, chosen, item = max(zip(q, self.pool, items, strict=True), key=lambda t: (t[0], -t[1].latency_ms))
        return chosen, item

    # -- verification, review, storage ------------------------------------------------------

    async def _judge(self, outcome: _Outcome, worker: WorkerPort, improved_over: float | None = None) -> None:
        """Evaluate the proposal, review flagged passes, store the trace and maybe a lesson."""
        proposal = outcome.proposal
        if proposal.llm_error is not None:
            outcome.gate, outcome.category, outcome.reason = "llm", "llm_error", proposal.llm_error
            return
        if proposal.code is None:
            outcome.gate, outcome.category = "no_code", "no_code"
            outcome.reason = proposal.reason or "no code in the reply"
            return
        fingerprint = code_fingerprint(proposal.code)
        earlier = self.seen.get(fingerprint)
        if earlier is not None:  # asked again and still the same: its verdict is known, nothing new to store
            outcome.gate, outcome.category, outcome.repeat_of = "repeat", "repeat", earlier
            outcome.reason = f"the same code as attempt {earlier.iteration} ({earlier.gate}: {earlier.reason})"[:300]
            return
        candidate = Candidate(source=proposal.code, format=self.brief.candidate_format)
        evaluation: Evaluation = await self.evaluator.evaluate(self.task, candidate)
        outcome.evaluation = evaluation
        verdict = evaluation.verdict
        outcome.feasible, outcome.gate = verdict.feasible, verdict.gate
        outcome.category, outcome.reason = verdict.category, verdict.reason
        if verdict.gate == "infra":  # the machine failed, not the candidate: no trace, lesson or reward
            return
        self.seen[fingerprint] = _Seen(len(self.attempts) + 1, verdict.gate, verdict.reason, verdict.details)
        flags = evaluation.flags
        if outcome.feasible and flags and self.config.review_flagged:
            review = await worker.review(ReviewRequest(task=self.brief, code=proposal.code, flags=flags,
                                                       measurements=profile_text(evaluation.profile)))
            outcome.review = review
            outcome.extra_tokens[0] += review.tokens_prompt
            outcome.extra_tokens[1] += review.tokens_completion
            if review.verdict == "hack":
                outcome.feasible, outcome.gate, outcome.category = False, "review", "review_hack"
                outcome.reason = f"LLM review judged it a hack ({', '.join(flags)}): {review.reasoning[:200]}"
        if outcome.feasible and evaluation.profile is None:
            outcome.feasible, outcome.gate, outcome.category = False, "runtime", "no_profile"
            outcome.reason = "verified but could not be profiled"
        outcome.attempt_id = await self._store_trace(outcome)
        await self._lesson(outcome, worker, improved_over)

    async def _store_trace(self, outcome: _Outcome) -> str:
        latency, speedup = self._latency(outcome), self._speedup(outcome)
        what = f"{outcome.gate} ({outcome.category})" if not outcome.feasible else f"feasible, {latency:.4g} ms"
        item = MemoryItem(
            kind="trace", backend=self.brief.backend, task_id=self.brief.task_id,
            task_signature=self.brief.signature or "", stage=outcome.stage, content=outcome.proposal.code or "",
            summary=f"{self.brief.task_id} {outcome.stage}: {what}",
            verdict=ItemVerdict(gate=outcome.gate, reason=outcome.reason[:300], latency_ms=latency, speedup=speedup),
            parent_id=outcome.parent_id, run_id=self.run_id, tags=trace_tags(self.brief),
            context_ids=outcome.credited,  # what was in the prompt when it was written (provenance credit)
        )
        [item_id] = await self.memory.add([item])
        return item_id

    async def _lesson(self, outcome: _Outcome, worker: WorkerPort, improved_over: float | None) -> None:
        """Every failure leaves a deterministic lesson (the model's lines added where its settings
        allow); a faster refinement, a model lesson where allowed."""
        ask_model = self.config.lessons is not False  # unset means on
        latency = self._latency(outcome)
        tokens = (0, 0)
        if not outcome.feasible:
            verdict = outcome.evaluation.verdict if outcome.evaluation else None
            failure = Failure(stage=outcome.stage, gate=outcome.gate, category=outcome.category,
                              reason=outcome.reason, details=verdict.details if verdict else "",
                              code=outcome.proposal.code or "")
            outcome.lesson_id, tokens = await self.lessons.failed(failure, outcome.attempt_id,
                                                                  worker if ask_model else None, outcome.start_code)
        elif ask_model and improved_over is not None and latency is not None and latency < improved_over:
            outcome.lesson_id, tokens = await self.lessons.faster(
                outcome.stage, outcome.proposal.code or "", outcome.start_code, improved_over, latency,
                outcome.attempt_id, worker)
        outcome.extra_tokens[0] += tokens[0]
        outcome.extra_tokens[1] += tokens[1]

    async def _retrieve(self, stage: Stage, query: str, kinds: list[str], api_names: list[str] | None = None,
                        **request: Any) -> Retrieval:
        # Feasible traces only: exemplar code never comes from a failed kernel (failures come
        # back as lessons); refine children have their own, marked, section.
        return await self.memory.retrieve(RetrievalRequest(query=query, stage=stage, backend=self.brief.backend,
                                                           kinds=kinds, trace_verdicts="feasible",  # type: ignore[arg-type]
                                                           api_names=api_names or [], **{"n": self.n, **request}))

    async def _update(self, outcome: _Outcome) -> None:
        """Credit exactly what the prompt showed (after truncation and deduplication), the start
        point included when refining."""
        retrieval = outcome.retrieval
        if retrieval is None or retrieval.mode == "none" or not (outcome.credited or outcome.slot):
            return  # no memory, nothing to learn: the `none` arm's bank stays as seeded
        # The id names run and operator: a resumed run takes back the updates of the attempts it
        # throws away (memory_actor.retraction.update_prefix).
        await self.memory.update(ValueUpdate(update_id=f"{self.run_id}/{self.brief.task_id}/{uuid.uuid4().hex}",
                                             retrieval_id=retrieval.retrieval_id if retrieval.items else None,
                                             shown_ids=outcome.credited, attempt_id=outcome.attempt_id,
                                             stage=outcome.stage, reward=outcome.reward, slot=outcome.slot))

    def _admit(self, outcome: _Outcome) -> None:
        latency = self._latency(outcome)
        assert outcome.attempt_id is not None and latency is not None and outcome.proposal.code is not None
        profile = outcome.evaluation.profile if outcome.evaluation else None
        self.pool.append(_Feasible(outcome.attempt_id, outcome.proposal.code, latency, self._speedup(outcome), profile))
        self.best_ms = latency if self.best_ms is None else min(self.best_ms, latency)

    # -- bookkeeping ------------------------------------------------------------------------

    def _record(self, iteration: int, outcome: _Outcome, wall_s: float) -> None:
        proposal = outcome.proposal
        retrieval = outcome.retrieval
        attempt = Attempt(
            run_id=self.run_id, task=self.brief.task_id, iteration=iteration, stage=outcome.stage,
            attempt_id=outcome.attempt_id, parent_id=outcome.parent_id,
            retrieval_id=retrieval.retrieval_id if retrieval else None,
            retrieved_item_ids=retrieval.item_ids if retrieval else [],
            candidate_format=self.brief.candidate_format, feasible=outcome.feasible, gate=outcome.gate,
            category=outcome.category, reason=outcome.reason, latency_ms=self._latency(outcome),
            speedup_vs_eager=self._speedup(outcome), reward=outcome.reward,
            tokens_prompt=proposal.tokens_prompt + outcome.extra_tokens[0],
            tokens_completion=proposal.tokens_completion + outcome.extra_tokens[1], wall_s=round(wall_s, 3),
            flags=outcome.evaluation.flags if outcome.evaluation else [], review=outcome.review,
            lesson_id=outcome.lesson_id, shown=outcome.shown, code=proposal.code if outcome.feasible else None,
        )
        self.attempts.append(attempt)
        self.result.record(attempt)
        self.log.info("attempt", iteration=iteration, stage=attempt.stage, gate=attempt.gate,
                      feasible=attempt.feasible, latency_ms=attempt.latency_ms, reward=attempt.reward,
                      retrieved=len(attempt.retrieved_item_ids), shown=len(attempt.shown),
                      usage=f"{attempt.tokens_prompt + attempt.tokens_completion} tok",  # a 'token' key is redacted
                      reason=attempt.reason[:120])
        if self.on_attempt is not None:
            self.on_attempt(attempt)

    def _task_query(self) -> str:
        return f"{self.brief.task_id}\n{self.brief.signature or ''}\n{self.brief.reference_source}"

    @staticmethod
    def _latency(outcome: _Outcome) -> float | None:
        profile = outcome.evaluation.profile if outcome.evaluation else None
        return profile.median_ms if profile is not None else None

    @staticmethod
    def _speedup(outcome: _Outcome) -> float | None:
        profile = outcome.evaluation.profile if outcome.evaluation else None
        return profile.speedup_vs_eager if profile is not None else None
