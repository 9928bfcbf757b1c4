"""One operator's episode: draft until feasible, then refine from value-chosen start points.

DESIGN.md section 2. Every iteration: retrieve context, ask the drafter or refiner, verify
(and profile) the candidate, reward the context in memory, store the attempt as a trace
item and, when it teaches something, a lesson as an experience item. Rewards sent to memory
are raw: the memory normalises refine rewards itself. The verdict on each proposal, and what
memory stores of it, is actors.episode_judge's; an iteration's record, actors.episode_outcome's.
"""

from __future__ import annotations

import math
import random
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import structlog

from actors.climb import climb_outcome, climb_request, climb_shown
from actors.code_extraction import code_fingerprint
from actors.config import EpisodeConfig
from actors.context import (
    context_item,
    draft_context,
    rung_fits,
    scope,
    shown_as,
    shown_items,
    slot_outcome,
    slot_request,
)
from actors.episode_judge import Judge
from actors.episode_outcome import Feasible, IterationOutcome
from actors.errors import error_line
from actors.llm_client import LLMAuthError, LLMModelNotFound, LLMUnavailable, LLMUnreachable
from actors.messages import (
    Attempt,
    ClimbRung,
    DraftRequest,
    EpisodeResult,
    Feedback,
    Proposal,
    RefineRequest,
    ShownItem,
    Stage,
    StartPoint,
    TaskBrief,
)
from actors.ports import EvaluatorPort, MemoryPort, WorkerPort
from actors.prompt_sections import profile_text
from actors.stops import EpisodeStops
from memory_actor.disk.bank_errors import BankWriteFailed
from memory_actor.items import MemoryItem
from memory_actor.messages import Retrieval, RetrievalRequest, ValueUpdate

log = structlog.get_logger("evokernel.episode")

FATAL_LLM_ERRORS = (LLMAuthError, LLMModelNotFound, LLMUnreachable)
# The endpoint failed through all its retries: the operator stops as infrastructure (the
# attempt in flight is not recorded, nothing is rewarded); `evokernel run --resume` redoes it.
INFRA_LLM_ERRORS = (LLMUnavailable,)


class AttemptNotRecorded(Exception):
    """Raised by `on_attempt` when it cannot record an attempt (a full disk under the run folder):
    the episode stops, and the campaign with it (run_to_end: resumable), rather than spend model
    calls on attempts that cannot be kept."""


def refine_reward(best_ms: float, new_ms: float) -> float:
    """tanh(log b - log l): positive when faster than the best so far, bounded in (-1, 1)."""
    return math.tanh(math.log(best_ms) - math.log(new_ms))


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
        self.pool: list[Feasible] = []
        self.best_ms: float | None = None
        self.previous: Feedback | None = None
        self.attempts: list[Attempt] = []
        self.result = EpisodeResult(task=brief.task_id)
        self.judge = Judge(task=task, brief=brief, memory=memory, evaluator=evaluator, config=config, run_id=run_id)
        # Issue 67: the plateau and no-compile stops (actors/stops.py); `pace`, set by a campaign with a time
        # budget, is asked before each attempt and may end the turn (actors/episode_turns.py continues it)
        self.stops = EpisodeStops.of(config)
        self.pace: Callable[[Episode], Awaitable[str | None]] | None = None
        self.spent_s = 0.0  # wall time of its earlier turns

    # -- the loop ---------------------------------------------------------------------------

    async def run(self) -> EpisodeResult:
        started = time.monotonic() - self.spent_s
        self.result.stopped_by = "iterations"
        try:
            for iteration in range(len(self.attempts) + 1, self.config.iterations + 1):
                stop = self._budget_spent(started) or await self._stopped()
                if stop:
                    self.result.stopped_by = stop
                    break
                t0 = time.monotonic()
                outcome = await (self._refine() if self.pool and not self._fresh_draft() else self._draft())
                self._record(iteration, outcome, time.monotonic() - t0)
                self.stops.observe(outcome)
        except (*FATAL_LLM_ERRORS, *INFRA_LLM_ERRORS, BankWriteFailed, AttemptNotRecorded):  # the campaign's to handle
            raise
        except Exception as exc:  # one broken operator must not end the campaign
            self.log.exception("episode_failed")  # the traceback goes to the log; the result gets one line
            self.result.error = error_line(exc)
            self.result.stopped_by = "error"
        finally:
            self.spent_s = time.monotonic() - started
        return self.result

    async def _stopped(self) -> str | None:
        """A stop rule's name (one log line, the reason in the result), or the pace's word, or None."""
        stop = self.stops.check(self.attempts, bool(self.pool))
        if stop is not None:
            self.log.info("operator_stop", rule=stop.rule, detail=stop.detail, attempts=len(self.attempts))
            self.result.stop_detail = stop.detail
            return stop.rule
        return await self.pace(self) if self.pace is not None else None

    def _budget_spent(self, started: float) -> str | None:
        cap = self.config.max_tokens_per_operator
        if cap is not None and self.result.tokens >= cap:
            return "tokens"
        wall = self.config.max_wall_s_per_operator
        if wall is not None and time.monotonic() - started >= wall:
            return "wall_time"
        return None

    # -- the two stages ---------------------------------------------------------------------

    async def _draft(self) -> IterationOutcome:
        # One decision (memory_actor/slots.py) says what goes beyond the static brief: nothing, the
        # family's first rung or example, or a kernel of the family, with or without the ranked items.
        # With start_from_rung (the learning pass) the operator's first draft shows its family's first
        # rung, where the brief says that kernel's signature maps onto this task's.
        # The first `fresh_drafts` drafts are fresh draws, each from the start (issue 64: the learning
        # pass banks several of the model's own kernels of an operator, not one)
        fresh = self._fresh_draft()
        start = self.config.start_from_rung and fresh and rung_fits(self.brief)
        retrieval = await self._retrieve("draft", self._task_query(), list(self.config.draft_kinds),
                                         slot=slot_request(self.brief, retry=self.previous is not None and not fresh,
                                                           start_from_rung=start,
                                                           cross_backend=self.config.cross_backend_kernels,
                                                           start_from=self.config.start_from if fresh else None))
        # What may be shown (a kernel in the task's own terms); the family's rung or example is also
        # pinned (shown before the ranked items, never cut), a kernel is not
        shown = draft_context(retrieval, self.brief, getattr(self.task, "path", None))
        exemplar, pinned, items, in_slot = shown.exemplar, shown.pinned, shown.items, shown.in_slot
        if retrieval.slot is not None:  # what the user sees of the decision: one line per draft
            self.log.info("memory_decision", family=retrieval.slot.family, context=retrieval.slot.context,
                          option=retrieval.slot.option, reason=retrieval.slot.reason)
        request = DraftRequest(task=self.brief, context=[context_item(i, "draft") for i in items],
                               api=[context_item(i, "draft") for i in retrieval.api_items],
                               previous=None if fresh else self._shown_failure(),
                               exemplar=exemplar, pinned=context_item(pinned, "draft") if pinned else None,
                               avoid=list(self.judge.seen), draw=self._iteration())
        proposal = await self.drafter.propose(request)
        known = ({i.id: (i, "context") for i in items} | {i.id: (i, "api") for i in retrieval.api_items}
                 | ({in_slot.id: (in_slot, "pinned" if pinned else "context")} if in_slot else {}))
        outcome = IterationOutcome("draft", proposal, retrieval,
                                   shown=shown_items(proposal.shown_ids, known, "draft", proposal.example_id,
                                                     shown.renamed),
                                   static_ids={i.id for i in retrieval.api_items if "core" in i.tags},
                                   slot=slot_outcome(retrieval, self.brief.backend, proposal.shown_ids))
        await self.judge.judge(outcome, self.drafter, self._iteration())
        if outcome.proposal.llm_error is None and outcome.gate != "infra":
            outcome.reward = 1.0 if outcome.feasible else -1.0
            await self._update(outcome)
        if outcome.feasible:
            if self.previous is not None and self.previous.code:  # what changed to pass: a lesson that teaches
                outcome.lesson_id = await self.judge.lessons.fixed(self.previous, outcome.proposal.code or "",
                                                                   outcome.attempt_id)
            self._admit(outcome)
        elif outcome.repeat_of is not None:  # show the repeated attempt's own verdict again
            earlier = outcome.repeat_of
            self.previous = Feedback(gate=earlier.gate, reason=earlier.reason, code=outcome.proposal.code,
                                     details=earlier.details)
        elif outcome.gate not in ("llm", "infra"):
            self.previous = Feedback(gate=outcome.gate, reason=outcome.reason, code=outcome.proposal.code,
                                     details=outcome.evaluation.verdict.details if outcome.evaluation else "")
        return outcome

    def _fresh_draft(self) -> bool:
        """Whether the next attempt is one of the operator's first `fresh_drafts` drafts: a fresh
        draw (no earlier attempt shown, the start option applied) even after a feasible one."""
        return len(self.attempts) < self.config.fresh_drafts

    def _shown_failure(self) -> Feedback | None:
        """What a retry shows of the failed draft before it: its gate, its reason and the first lines
        of its details (what was executed: the first compile errors, the first mismatches), not its
        code unless `retry_shows_code` (issue 64: at this model size re-showing the failing code
        recovered 0 of 220 retries; fresh draws with memory do better). The full record stays for
        the lesson drawn when a later draft passes."""
        failed = self.previous
        if failed is None or self.config.retry_shows_code:
            return failed
        lines = [line for line in failed.details.splitlines() if line.strip()][:self.config.retry_detail_lines]
        return failed.model_copy(update={"code": None, "details": "\n".join(lines)})

    async def _refine(self) -> IterationOutcome:
        start, start_item = await self._choose_start_point()
        start_point = StartPoint(id=start.id, code=start.code, latency_ms=start.latency_ms,
                                 speedup_vs_eager=start.speedup, profile=profile_text(start.profile))
        retrieval, climb = await self._climb(start, start_point)
        shown = self.config.max_children_in_prompt
        # Newest first: the prompt budget drops the last listed, and old variants say least.
        children = [c for c in await self.memory.children(start.id) if c.kind == "trace"][-shown:][::-1] if shown else []
        # The start point and its children have their own sections: do not show them twice.
        elsewhere = {start.id, *(c.id for c in children)}
        ranked = [terms for i in retrieval.items if i.id not in elsewhere
                  and (terms := shown_as(i, self.brief, "refine")) is not None]
        items = [terms.item for terms in ranked]
        assert self.best_ms is not None
        best_before = self.best_ms
        request = RefineRequest(
            task=self.brief, start=start_point, climb=climb,
            best_latency_ms=best_before, api=[context_item(i, "refine") for i in retrieval.api_items],
            context=[context_item(i, "refine") for i in items],
            children=[context_item(c, "refine") for c in children], avoid=list(self.judge.seen),
            draw=self._iteration(),
        )
        if self._proposes(climb):
            # the start kernel's own formula in the faster form: the system's refinement, checked like any
            proposal = Proposal(code=climb.code, proposed_by="system")
            self.log.info("climb_merged_proposed", rung=climb.rung, item=climb.item_id)
        else:
            proposal = await self.refiner.propose(request)
        known = ({i.id: (i, "context") for i in items} | {i.id: (i, "api") for i in retrieval.api_items}
                 | {c.id: (c, "child") for c in children})
        static_ids = {i.id for i in retrieval.api_items if "core" in i.tags}
        start_record = ShownItem(id=start.id, kind="trace", task=self.brief.task_id, role="start",
                                 q=start_item.q_refine if start_item is not None else None)
        climbed = ([ShownItem(id=climb.item_id, kind="merged" if climb.merged else "api", task=climb.task_id,
                              role="climb", renamed=climb.renamed,
                              q=retrieval.slot_item.q_refine if retrieval.slot_item else None)] if climb else [])
        outcome = IterationOutcome("refine", proposal, retrieval, parent_id=start.id, start_code=start.code,
                                   shown=[start_record, *climbed,
                                          *shown_items(proposal.shown_ids, known, "refine", None,
                                                       {t.item.id: t.renamed for t in ranked})],
                                   static_ids=static_ids, slot=climb_outcome(retrieval, self.brief.backend, climb))
        await self.judge.judge(outcome, self.refiner, self._iteration(), improved_over=best_before)
        if outcome.proposal.llm_error is None and outcome.gate != "infra":
            latency = outcome.latency_ms
            outcome.reward = refine_reward(best_before, latency) if outcome.feasible and latency else -1.0
            await self._update(outcome)
        if outcome.feasible and (outcome.latency_ms or 0.0) <= start.latency_ms:
            self._admit(outcome)  # a correct but slower kernel is no start point (issue 65)
        return outcome

    async def _climb(self, start: Feasible, start_point: StartPoint) -> tuple[Retrieval, ClimbRung | None]:
        """The refine decision (issue 65, actors/climb.py): the next rung up of the task's family and
        shape for the start point's rung, or the static brief; not taken where there is no rung
        above. Where the system's own proposal of that rung was tried already (the same start point
        drawn again), the decision is asked for the form above it instead."""
        past: str | None = None
        while True:
            retrieval = await self._retrieve("refine", f"{self._task_query()}\n{start.code}", list(self.config.refine_kinds),
                                             slot=climb_request(self.brief, start.profile, past))
            if retrieval.slot is not None:
                self.log.info("refine_decision", family=retrieval.slot.family, context=retrieval.slot.context,
                              option=retrieval.slot.option, reason=retrieval.slot.reason)
            climb = climb_shown(retrieval, self.brief, start_point)
            tried = (climb is not None and climb.merged and self.config.climb_merged == "propose"
                     and code_fingerprint(climb.code) in self.judge.seen)
            if climb is None or not tried or climb_request(self.brief, start.profile, climb.rung) is None:
                return retrieval, climb
            self.log.info("climb_proposal_tried", rung=climb.rung, start=start.id)
            past = climb.rung

    def _proposes(self, climb: ClimbRung | None) -> bool:
        """Whether the system proposes the refinement itself: the decision showed a rung with the
        start kernel's formula already in it, not tried before, and `climb_merged` is `propose`."""
        return (climb is not None and climb.merged and self.config.climb_merged == "propose"
                and code_fingerprint(climb.code) not in self.judge.seen)

    async def _choose_start_point(self) -> tuple[Feasible, MemoryItem | None]:
        """Epsilon-greedy on q_refine; ties go to the faster kernel. Returns its item too (its
        value then is part of the attempt's provenance)."""
        if len(self.pool) == 1 or self.rng.random() < self.config.start_point_epsilon:
            chosen = self.rng.choice(self.pool)
            return chosen, await self.memory.get(chosen.id)
        items = [await self.memory.get(p.id) for p in self.pool]
        q = [(i.q_refine if i is not None and i.q_refine is not None else 0.0) for i in items]
        _, chosen, item = max(zip(q, self.pool, items, strict=True), key=lambda t: (t[0], -t[1].latency_ms))
        return chosen, item

    # -- memory and the start-point set -----------------------------------------------------

    async def _retrieve(self, stage: Stage, query: str, kinds: list[str], api_names: list[str] | None = None,
                        **request: Any) -> Retrieval:
        # Feasible traces only: exemplar code never comes from a failed kernel (failures come
        # back as lessons); refine children have their own, marked, section.
        return await self.memory.retrieve(RetrievalRequest(query=query, stage=stage, backend=self.brief.backend,
                                                           kinds=kinds, trace_verdicts="feasible",  # type: ignore[arg-type]
                                                           api_names=api_names or [],
                                                           **{"n": self.n, **scope(self.brief), **request}))

    async def _update(self, outcome: IterationOutcome) -> None:
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

    def _admit(self, outcome: IterationOutcome) -> None:
        latency = outcome.latency_ms
        assert outcome.attempt_id is not None and latency is not None and outcome.proposal.code is not None
        self.pool.append(Feasible(outcome.attempt_id, outcome.proposal.code, latency, outcome.speedup, outcome.profile))
        self.best_ms = latency if self.best_ms is None else min(self.best_ms, latency)

    # -- bookkeeping ------------------------------------------------------------------------

    def _record(self, iteration: int, outcome: IterationOutcome, wall_s: float) -> None:
        attempt = outcome.attempt(run_id=self.run_id, task=self.brief.task_id, iteration=iteration,
                                  candidate_format=self.brief.candidate_format, wall_s=wall_s)
        self.attempts.append(attempt)
        self.result.record(attempt)
        self.log.info("attempt", iteration=iteration, stage=attempt.stage, gate=attempt.gate,
                      feasible=attempt.feasible, latency_ms=attempt.latency_ms, reward=attempt.reward,
                      retrieved=len(attempt.retrieved_item_ids), shown=len(attempt.shown),
                      usage=f"{attempt.tokens_prompt + attempt.tokens_completion} tok",  # a 'token' key is redacted
                      reason=attempt.reason[:120])
        if self.on_attempt is not None:
            self.on_attempt(attempt)

    def _iteration(self) -> int:
        """The number of the iteration under way (its attempt is recorded when it ends)."""
        return len(self.attempts) + 1

    def _task_query(self) -> str:
        return f"{self.brief.task_id}\n{self.brief.signature or ''}\n{self.brief.reference_source}"
