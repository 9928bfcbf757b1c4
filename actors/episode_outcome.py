"""What an episode keeps between iterations (the start-point set, the verdicts of code already
seen) and what one iteration produced before it becomes an Attempt (actors.messages)."""

from __future__ import annotations

from dataclasses import dataclass, field

from actors.context import credited_ids
from actors.messages import Attempt, Proposal, Review, ShownItem, Stage
from memory_actor.messages import Retrieval
from memory_actor.slots import SlotOutcome
from npu_pool.verdict import CandidateFormat, Evaluation, ProfileReport


@dataclass
class Feasible:
    """A member of the start-point set P."""

    id: str
    code: str
    latency_ms: float
    speedup: float | None
    profile: ProfileReport | None


@dataclass
class Seen:
    """An attempt already evaluated in this episode, by its code_fingerprint."""

    iteration: int
    gate: str
    reason: str
    details: str


@dataclass
class IterationOutcome:
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
    repeat_of: Seen | None = None
    shown: list[ShownItem] = field(default_factory=list)  # what the prompt showed: provenance and credit
    static_ids: set[str] = field(default_factory=set)  # the static brief's items: shown to every arm, not credited
    slot: SlotOutcome | None = None  # what the worked-example slot showed: credited with the verdict
    extra_tokens: list[int] = field(default_factory=lambda: [0, 0])

    @property
    def credited(self) -> list[str]:
        return credited_ids(self.shown, self.static_ids)

    @property
    def profile(self) -> ProfileReport | None:
        return self.evaluation.profile if self.evaluation else None

    @property
    def latency_ms(self) -> float | None:
        return self.profile.median_ms if self.profile is not None else None

    @property
    def speedup(self) -> float | None:
        return self.profile.speedup_vs_eager if self.profile is not None else None

    def attempt(self, *, run_id: str, task: str, iteration: int, candidate_format: CandidateFormat,
                wall_s: float) -> Attempt:
        proposal, retrieval = self.proposal, self.retrieval
        return Attempt(
            run_id=run_id, task=task, iteration=iteration, stage=self.stage,
            attempt_id=self.attempt_id, parent_id=self.parent_id,
            retrieval_id=retrieval.retrieval_id if retrieval else None,
            retrieved_item_ids=retrieval.item_ids if retrieval else [],
            candidate_format=candidate_format, feasible=self.feasible, gate=self.gate,
            category=self.category, reason=self.reason, latency_ms=self.latency_ms,
            speedup_vs_eager=self.speedup, reward=self.reward,
            tokens_prompt=proposal.tokens_prompt + self.extra_tokens[0],
            tokens_completion=proposal.tokens_completion + self.extra_tokens[1], wall_s=round(wall_s, 3),
            sampling_seed=proposal.sampling_seed, proposed_by=proposal.proposed_by,
            flags=self.evaluation.flags if self.evaluation else [], review=self.review,
            lesson_id=self.lesson_id, shown=self.shown, code=proposal.code if self.feasible else None,
            reply=proposal.reply if proposal.code is None else None,
            stages=self.profile.stages if self.feasible and self.profile is not None else None,
        )
