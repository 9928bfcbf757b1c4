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
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import structlog

from actors.code_extraction import code_fingerprint
from actors.config import EpisodeConfig
from actors.evaluator import Evaluation
from actors.llm_client import LLMAuthError, LLMModelNotFound, LLMUnreachable
from actors.messages import (
    Attempt,
    ContextItem,
    DraftRequest,
    EpisodeResult,
    Feedback,
    LessonRequest,
    Proposal,
    RefineRequest,
    Review,
    ReviewRequest,
    Stage,
    StartPoint,
    TaskBrief,
)
from actors.ports import EvaluatorPort, MemoryPort, WorkerPort
from memory_actor.items import ItemVerdict, MemoryItem
from memory_actor.messages import Retrieval, RetrievalRequest, ValueUpdate
from npu_pool.verdict import Candidate, ProfileReport, Verdict

log = structlog.get_logger("evokernel.episode")

DRAFT_KINDS = ["experience", "trace", "practice"]
REFINE_KINDS = ["trace", "practice", "experience"]
FATAL_LLM_ERRORS = (LLMAuthError, LLMModelNotFound, LLMUnreachable)


def refine_reward(best_ms: float, new_ms: float) -> float:
    """tanh(log b - log l): positive when faster than the best so far, bounded in (-1, 1)."""
    return math.tanh(math.log(best_ms) - math.log(new_ms))


def profile_text(profile: ProfileReport | None) -> str:
    if profile is None:
        return ""
    parts = [f"median {profile.median_ms:.4g} ms (IQR {profile.iqr_ms:.3g} ms over {profile.trials} trials); "
             f"PyTorch eager {profile.baseline_eager_ms:.4g} ms"]
    if profile.achieved_gbps is not None:
        parts.append(f"achieved {profile.achieved_gbps:.3g} GB/s")
    if profile.achieved_gflops is not None:
        parts.append(f"achieved {profile.achieved_gflops:.3g} GFLOP/s")
    parts.append(f"bound: {profile.bound}")
    parts += [f"hint: {hint}" for hint in profile.hints]
    return "\n".join(parts)


def context_item(item: MemoryItem) -> ContextItem:
    summary = item.summary or (item.name or "")
    if item.kind == "trace" and item.verdict is not None:
        latency = f", {item.verdict.latency_ms:.4g} ms" if item.verdict.latency_ms else ""
        summary = f"{summary} [{item.verdict.gate}{latency}]".strip()
    return ContextItem(id=item.id, kind=item.kind, summary=summary, content=item.content)


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
    extra_tokens: list[int] = field(default_factory=lambda: [0, 0])


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
        except FATAL_LLM_ERRORS:
            raise
        except Exception as exc:  # one broken operator must not end the campaign
            self.log.exception("episode_failed")
            self.result.error = f"{type(exc).__name__}: {exc}"
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
        retrieval = await self._retrieve("draft", self._task_query(), DRAFT_KINDS)
        request = DraftRequest(task=self.brief, context=self._context(retrieval), api=self._api(retrieval),
                               previous=self.previous, avoid=list(self.seen))
        outcome = _Outcome("draft", await self.drafter.propose(request), retrieval)
        await self._judge(outcome, self.drafter)
        if outcome.proposal.llm_error is None:
            outcome.reward = 1.0 if outcome.feasible else -1.0
            await self._update(outcome, [])
        if outcome.feasible:
            self._admit(outcome)
        elif outcome.repeat_of is not None:  # show the repeated attempt's own verdict again
            earlier = outcome.repeat_of
            self.previous = Feedback(gate=earlier.gate, reason=earlier.reason, code=outcome.proposal.code,
                                     details=earlier.details)
        elif outcome.gate != "llm":
            self.previous = Feedback(gate=outcome.gate, reason=outcome.reason, code=outcome.proposal.code,
                                     details=outcome.evaluation.verdict.details if outcome.evaluation else "")
        return outcome

    async def _refine(self) -> _Outcome:
        start = await self._choose_start_point()
        retrieval = await self._retrieve("refine", f"{self._task_query()}\n{start.code}", REFINE_KINDS)
        shown = self.config.max_children_in_prompt
        children = (await self.memory.children(start.id))[-shown:] if shown else []
        # The start point and its children have their own sections: do not show them twice.
        elsewhere = {start.id, *(c.id for c in children)}
        assert self.best_ms is not None
        best_before = self.best_ms
        request = RefineRequest(
            task=self.brief,
            start=StartPoint(id=start.id, code=start.code, latency_ms=start.latency_ms,
                             speedup_vs_eager=start.speedup, profile=profile_text(start.profile)),
            best_latency_ms=best_before, api=self._api(retrieval),
            context=[c for c in self._context(retrieval) if c.id not in elsewhere],
            children=[context_item(c) for c in children], avoid=list(self.seen),
        )
        outcome = _Outcome("refine", await self.refiner.propose(request), retrieval, parent_id=start.id,
                           start_code=start.code)
        await self._judge(outcome, self.refiner, improved_over=best_before)
        if outcome.proposal.llm_error is None:
            latency = self._latency(outcome)
            outcome.reward = refine_reward(best_before, latency) if outcome.feasible and latency else -1.0
            await self._update(outcome, [start.id])
        if outcome.feasible:
            self._admit(outcome)
        return outcome

    async def _choose_start_point(self) -> _Feasible:
        """Epsilon-greedy on q_refine; ties go to the faster kernel."""
        if len(self.pool) == 1 or self.rng.random() < self.config.start_point_epsilon:
            return self.rng.choice(self.pool)
        items = [await self.memory.get(p.id) for p in self.pool]
        q = [(i.q_refine if i is not None and i.q_refine is not None else 0.0) for i in items]
        return max(zip(q, self.pool, strict=True), key=lambda pair: (pair[0], -pair[1].latency_ms))[1]

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
        latency = self._latency(outcome)
        improved = outcome.feasible and improved_over is not None and latency is not None and latency < improved_over
        if self.config.lessons is not False and (not outcome.feasible or improved):  # unset means on
            outcome.lesson_id = await self._lesson(outcome, worker, improved, improved_over)

    async def _store_trace(self, outcome: _Outcome) -> str:
        latency, speedup = self._latency(outcome), self._speedup(outcome)
        what = f"{outcome.gate} ({outcome.category})" if not outcome.feasible else f"feasible, {latency:.4g} ms"
        item = MemoryItem(
            kind="trace", backend=self.brief.backend, task_id=self.brief.task_id,
            task_signature=self.brief.signature or "", stage=outcome.stage, content=outcome.proposal.code or "",
            summary=f"{self.brief.task_id} {outcome.stage}: {what}",
            verdict=ItemVerdict(gate=outcome.gate, reason=outcome.reason[:300], latency_ms=latency, speedup=speedup),
            parent_id=outcome.parent_id, run_id=self.run_id,
        )
        [item_id] = await self.memory.add([item])
        return item_id

    async def _lesson(self, outcome: _Outcome, worker: WorkerPort, improved: bool,
                      improved_over: float | None) -> str | None:
        verdict: Verdict | None = outcome.evaluation.verdict if outcome.evaluation else None
        if improved:
            text = f"faster: {improved_over:.4g} ms -> {self._latency(outcome):.4g} ms"
        else:
            text = f"failed at the {outcome.gate} gate: {outcome.reason}\n{verdict.details if verdict else ''}".strip()
        lesson = await worker.lesson(LessonRequest(task=self.brief, stage=outcome.stage, code=outcome.proposal.code or "",
                                                   outcome=text, improved=improved, start_code=outcome.start_code))
        outcome.extra_tokens[0] += lesson.tokens_prompt
        outcome.extra_tokens[1] += lesson.tokens_completion
        if not lesson.text:
            return None
        item = MemoryItem(
            kind="experience", backend=self.brief.backend, task_id=self.brief.task_id,
            task_signature=self.brief.signature or "", stage=outcome.stage, content=lesson.text,
            summary=f"{self.brief.task_id}: {'what made it faster' if improved else 'why it failed'}",
            parent_id=outcome.attempt_id, reward=outcome.reward, run_id=self.run_id,
        )
        [item_id] = await self.memory.add([item])
        return item_id

    async def _retrieve(self, stage: Stage, query: str, kinds: list[str]) -> Retrieval:
        return await self.memory.retrieve(RetrievalRequest(query=query, stage=stage, backend=self.brief.backend,
                                                           kinds=kinds, n=self.n))  # type: ignore[arg-type]

    async def _update(self, outcome: _Outcome, extra_ids: list[str]) -> None:
        retrieval = outcome.retrieval
        if retrieval is None or not (retrieval.items or extra_ids):
            return
        await self.memory.update(ValueUpdate(retrieval_id=retrieval.retrieval_id if retrieval.items else None,
                                             item_ids=extra_ids, stage=outcome.stage, reward=outcome.reward))

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
            lesson_id=outcome.lesson_id,
        )
        self.attempts.append(attempt)
        self.result.record(attempt)
        self.log.info("attempt", iteration=iteration, stage=attempt.stage, gate=attempt.gate,
                      feasible=attempt.feasible, latency_ms=attempt.latency_ms, reward=attempt.reward,
                      retrieved=len(attempt.retrieved_item_ids),
                      usage=f"{attempt.tokens_prompt + attempt.tokens_completion} tok",  # a 'token' key is redacted
                      reason=attempt.reason[:120])
        if self.on_attempt is not None:
            self.on_attempt(attempt)

    def _task_query(self) -> str:
        return f"{self.brief.task_id}\n{self.brief.signature or ''}\n{self.brief.reference_source}"

    @staticmethod
    def _context(retrieval: Retrieval) -> list[ContextItem]:
        return [context_item(item) for item in retrieval.items]

    @staticmethod
    def _api(retrieval: Retrieval) -> list[ContextItem]:
        return [context_item(item) for item in retrieval.api_items]

    @staticmethod
    def _latency(outcome: _Outcome) -> float | None:
        profile = outcome.evaluation.profile if outcome.evaluation else None
        return profile.median_ms if profile is not None else None

    @staticmethod
    def _speedup(outcome: _Outcome) -> float | None:
        profile = outcome.evaluation.profile if outcome.evaluation else None
        return profile.speedup_vs_eager if profile is not None else None
