"""One operator's episode, put together the same way by both campaigns, and what its end means.

The single-process campaign (launch/campaign.py) and the Ray episode task
(launch/ray_campaign/campaign_services.py) differ only in the ports they pass: plain objects in this process,
or actor handles. Everything else (loading and fitting the task, the backend's candidate format,
the brief, the Episode, and how an LLM failure ends it) is here, once.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from pydantic import BaseModel

from actors.briefing import candidate_format_for, task_brief
from actors.config import EpisodeConfig, LLMConfig
from actors.episode import AttemptNotRecorded, Episode
from actors.errors import error_message
from actors.llm_client import (
    LLMAuthError,
    LLMModelNotFound,
    LLMUnavailable,
    LLMUnreachable,
    billed_tokens,
)
from actors.messages import Attempt, EpisodeResult
from actors.ports import EvaluatorPort, MemoryPort, WorkerPort
from memory_actor.disk.bank_errors import BankWriteFailed
from npu_pool.backends import Backend
from npu_pool.config import HarnessConfig
from npu_pool.sandbox.task_loader import load_task_for


class _MemorySettings(Protocol):
    items_per_prompt: int


class RunSettings(Protocol):
    """The parts of the run's settings (launch.config.Settings) an episode is built from."""

    harness: HarnessConfig
    llm: LLMConfig
    episode: EpisodeConfig
    memory: _MemorySettings


INFRA = "infra"  # EpisodeResult.stopped_by of an operator the LLM endpoint stopped (resumable, not a verdict)


class EpisodeEnd(BaseModel):
    """An episode's result and what the campaign must do about how it ended."""

    result: EpisodeResult
    fatal: str | None = None  # the LLM configuration is wrong (key, model), the bank cannot be written: stop
    llm_lost: bool = False  # the endpoint stopped answering through all retries: pause the campaign


def build_episode(task_path: str | Path, settings: RunSettings, backend: Backend, *, memory: MemoryPort,
                  drafter: WorkerPort, refiner: WorkerPort, evaluator: EvaluatorPort, run_id: str,
                  on_attempt: Callable[[Attempt], object] | None = None) -> Episode | EpisodeResult:
    """The operator's Episode, or its failed result when the task file does not load (a broken
    task file is that operator's failure only)."""
    try:
        task = load_task_for(task_path, settings.harness)
    except Exception as exc:
        return EpisodeResult(task=Path(task_path).stem, stopped_by="error", error=f"task load: {exc}")
    brief = task_brief(task, backend, candidate_format_for(settings.llm, backend, task))  # the task's facts, once
    return Episode(task=task, brief=brief, memory=memory, drafter=drafter,
                   refiner=refiner, evaluator=evaluator, config=settings.episode, run_id=run_id,
                   items_per_prompt=settings.memory.items_per_prompt, on_attempt=on_attempt)


async def run_to_end(episode: Episode) -> EpisodeEnd:
    """Run the episode; an LLM failure ends it with the result so far and says what it means
    for the campaign. Interruptions (Ctrl-C, cancellation) propagate."""
    try:
        return EpisodeEnd(result=await episode.run())
    except LLMUnreachable as exc:
        result = episode.result.model_copy(update={"error": f"LLM endpoint lost: {error_message(exc)}",
                                                   "stopped_by": INFRA})
        return EpisodeEnd(result=result, llm_lost=True)
    except LLMUnavailable as exc:  # retries ran out on endpoint faults: not the model's verdict
        result = episode.result.model_copy(update={"error": f"LLM endpoint fault: {error_message(exc)}",
                                                   "stopped_by": INFRA,  # what the endpoint billed still counts
                                                   "tokens": episode.result.tokens + sum(billed_tokens(exc))})
        return EpisodeEnd(result=result)
    except (BankWriteFailed, AttemptNotRecorded) as exc:  # the bank or the run folder cannot be written: stop
        line = error_message(exc)
        return EpisodeEnd(result=episode.result.model_copy(update={"error": line, "stopped_by": INFRA}), fatal=line)
    except (LLMAuthError, LLMModelNotFound) as exc:
        line = error_message(exc)
        return EpisodeEnd(result=episode.result.model_copy(update={"error": line, "stopped_by": "error"}), fatal=line)
