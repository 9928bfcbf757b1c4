"""The verdict on one proposal of an episode, and what memory keeps of it.

A proposal without code, or the same code as an earlier attempt (by code_fingerprint), is judged
without the evaluator; any other is verified and profiled, a flagged pass reviewed by the worker,
and the attempt stored as a trace item with its lesson. An infrastructure verdict (the machine
failed, not the candidate) leaves nothing behind: no trace, lesson or remembered verdict.
"""

from __future__ import annotations

from typing import Any

from actors.code_extraction import code_fingerprint
from actors.config import EpisodeConfig
from actors.context import trace_tags
from actors.episode_outcome import IterationOutcome, Seen
from actors.lessons import Failure, LessonWriter
from actors.messages import ReviewRequest, TaskBrief
from actors.ports import EvaluatorPort, MemoryPort, WorkerPort
from actors.prompt_sections import profile_text
from memory_actor.items import ItemVerdict, MemoryItem
from npu_pool.verdict import Candidate, Evaluation


class Judge:
    """Judges an episode's proposals; `seen` holds the verdicts of the code evaluated so far."""

    def __init__(self, *, task: Any, brief: TaskBrief, memory: MemoryPort, evaluator: EvaluatorPort,
                 config: EpisodeConfig, run_id: str):
        self.task, self.brief = task, brief
        self.memory, self.evaluator = memory, evaluator
        self.config = config
        self.run_id = run_id
        self.seen: dict[str, Seen] = {}  # code_fingerprint -> its verdict: repeats are not evaluated again
        self.lessons = LessonWriter(memory, brief, run_id)

    async def judge(self, outcome: IterationOutcome, worker: WorkerPort, iteration: int,
                    improved_over: float | None = None) -> None:
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
        self.seen[fingerprint] = Seen(iteration, verdict.gate, verdict.reason, verdict.details)
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

    async def _store_trace(self, outcome: IterationOutcome) -> str:
        latency = outcome.latency_ms
        what = f"{outcome.gate} ({outcome.category})" if not outcome.feasible else f"feasible, {latency:.4g} ms"
        item = MemoryItem(
            kind="trace", backend=self.brief.backend, task_id=self.brief.task_id,
            task_signature=self.brief.signature or "", stage=outcome.stage, content=outcome.proposal.code or "",
            summary=f"{self.brief.task_id} {outcome.stage}: {what}",
            verdict=ItemVerdict(gate=outcome.gate, reason=outcome.reason[:300], latency_ms=latency,
                                speedup=outcome.speedup),
            parent_id=outcome.parent_id, run_id=self.run_id, tags=trace_tags(self.brief),
            context_ids=outcome.credited,  # what was in the prompt when it was written (provenance credit)
        )
        [item_id] = await self.memory.add([item])
        return item_id

    async def _lesson(self, outcome: IterationOutcome, worker: WorkerPort, improved_over: float | None) -> None:
        """Every failure leaves a deterministic lesson (the model's lines added where its settings
        allow); a faster refinement, a model lesson where allowed."""
        ask_model = self.config.lessons is not False  # unset means on
        latency = outcome.latency_ms
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
