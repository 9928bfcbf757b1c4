"""One whole episode in this process, for the episode tests: the real harness, a real LanceDB bank
and the scripted LLM server."""

from __future__ import annotations

import asyncio

from actors.briefing import task_brief
from actors.config import EpisodeConfig
from actors.drafter import Drafter
from actors.episode import Episode
from actors.episode_factory import run_to_end
from actors.evaluator import Evaluator
from actors.ports import InProcess
from actors.refiner import Refiner
from memory_actor.bank import MemoryBank
from npu_pool.backends import get_backend
from tests.actors.conftest import llm_config


def run_episode(server, task, harness_config, memory_config, iterations, llm_overrides=None, bank=None,
                on_attempt=None, **episode):
    """One episode in this process; returns (result, attempts, bank)."""
    bank = bank or MemoryBank(memory_config)

    async def go():
        llm = llm_config(server, **(llm_overrides or {}))
        drafter, refiner = Drafter(llm), Refiner(llm)
        try:
            ep = Episode(task=task, brief=task_brief(task, get_backend("cpu"), "kernel"), memory=InProcess(bank),
                         drafter=InProcess(drafter), refiner=InProcess(refiner),
                         evaluator=InProcess(Evaluator(harness_config)),
                         config=EpisodeConfig(iterations=iterations, **episode), run_id="test-run",
                         on_attempt=on_attempt)
            return (await run_to_end(ep)).result, ep.attempts
        finally:
            await drafter.aclose()
            await refiner.aclose()

    result, attempts = asyncio.run(go())
    return result, attempts, bank


def credited(attempt) -> list[str]:
    """What an attempt's reward goes to: what its prompt showed (the start point included), API items aside."""
    return [s.id for s in attempt.shown if s.kind != "api"]
