"""An episode in turns (issue 67): what an operator's episode keeps between two turns, so a
campaign with a time budget can move an operator down, run others, and continue it later, in
this process, in another Ray task, or after `evokernel run --resume` (the state is JSON in the run
folder: launch/budget.py writes it).

A turn ends when the episode's pace (set by the campaign) says so before an attempt; the next
turn is a new Episode for the same task (actors.episode_factory.build_episode) given this state:
its attempts, start-point set, best latency, last failure, the verdicts of the code it has seen,
the wall time it spent, its random state and what its drafts were offered (actors/stops.py). It
then goes on exactly as if it had never stopped: iterations keep counting from where they were,
and the caps (iterations, tokens, wall time) count over all its turns.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from actors.episode_outcome import Feasible, Seen
from actors.messages import Attempt, EpisodeResult, Feedback
from npu_pool.verdict import ProfileReport


class PoolMember(BaseModel):
    id: str
    code: str
    latency_ms: float
    speedup: float | None = None
    profile: ProfileReport | None = None


class SeenVerdict(BaseModel):
    iteration: int
    gate: str
    reason: str
    details: str = ""


class EpisodeState(BaseModel):
    """One operator's episode between two turns."""

    task: str
    attempts: list[Attempt] = Field(default_factory=list)
    result: EpisodeResult
    pool: list[PoolMember] = Field(default_factory=list)
    best_ms: float | None = None
    previous: Feedback | None = None
    seen: dict[str, SeenVerdict] = Field(default_factory=dict)
    spent_s: float = 0.0
    rng: list[Any] | None = Field(None, description="random.Random.getstate(), as JSON lists")
    stops: dict[str, Any] = Field(default_factory=dict)
    turns: int = Field(0, description="turns it has had")


def suspend(episode: Any, turns: int = 1) -> EpisodeState:
    """The state of EPISODE (actors.episode.Episode) after a turn."""
    version, internal, gauss = episode.rng.getstate()
    return EpisodeState(
        task=episode.brief.task_id, attempts=list(episode.attempts), result=episode.result.model_copy(),
        pool=[PoolMember(id=p.id, code=p.code, latency_ms=p.latency_ms, speedup=p.speedup, profile=p.profile)
              for p in episode.pool],
        best_ms=episode.best_ms, previous=episode.previous,
        seen={k: SeenVerdict(iteration=v.iteration, gate=v.gate, reason=v.reason, details=v.details)
              for k, v in episode.judge.seen.items()},
        spent_s=episode.spent_s, rng=[version, list(internal), gauss], stops=episode.stops.state(), turns=turns)


def restore(episode: Any, state: EpisodeState) -> None:
    """Give a freshly built EPISODE of the same task the state of its earlier turns."""
    if state.task != episode.brief.task_id:
        raise ValueError(f"the state of {state.task} cannot continue {episode.brief.task_id}")
    episode.attempts = list(state.attempts)
    episode.result = state.result.model_copy()
    episode.pool = [Feasible(p.id, p.code, p.latency_ms, p.speedup, p.profile) for p in state.pool]
    episode.best_ms = state.best_ms
    episode.previous = state.previous
    episode.judge.seen = {k: Seen(v.iteration, v.gate, v.reason, v.details) for k, v in state.seen.items()}
    episode.spent_s = state.spent_s
    if state.rng is not None:
        version, internal, gauss = state.rng
        episode.rng.setstate((version, tuple(internal), gauss))
    episode.stops.restore(state.stops)
