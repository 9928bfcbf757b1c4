"""Drafter replies that disappoint become reasons, the endpoint's faults exceptions; reviews and lessons parse."""

from __future__ import annotations

import asyncio

import pytest

from actors.code_extraction import code_fingerprint, extract_code
from actors.drafter import Drafter
from actors.llm_client import LLMUnavailable
from actors.messages import (
    DraftRequest,
    LessonRequest,
    RefineRequest,
    ReviewRequest,
    StartPoint,
    TaskBrief,
)
from actors.refiner import Refiner
from tests.actors import replies
from tests.actors.conftest import llm_config
from tests.actors.openai_server import Reply

TASK = TaskBrief(task_id="4_ReLU", backend="cpu", reference_source="class Model: ...",
                 signature='extern "C" void kernel(const float* x, float* out, int64_t x_d0);')


def ask(server, *scripted, call="propose"):
    server.script(*scripted)

    async def go():
        drafter = Drafter(llm_config(server, max_retries=1))
        try:
            if call == "propose":
                return await drafter.propose(DraftRequest(task=TASK))
            if call == "review":
                return await drafter.review(ReviewRequest(task=TASK, code="...", flags=["excessive_speedup"]))
            return await drafter.lesson(LessonRequest(task=TASK, stage="draft", code="...", outcome="compile error"))
        finally:
            await drafter.aclose()

    return asyncio.run(go())


def test_code_and_tokens(llm_server):
    proposal = ask(llm_server, Reply(replies.FAST, prompt_tokens=100, completion_tokens=20))
    assert proposal.code.startswith("#include <cstdint>") and proposal.reason is None and proposal.reply is None
    assert (proposal.tokens_prompt, proposal.tokens_completion, proposal.finish_reason) == (100, 20, "stop")


def test_disappointing_replies_become_reasons(llm_server):
    cut = ask(llm_server, Reply(replies.FAST[:120], finish_reason="length"))
    assert cut.code is None and "cut off" in cut.reason and "max_tokens" in cut.reason
    assert ask(llm_server, Reply("")).reason == "empty reply"
    assert ask(llm_server, Reply(None)).reason == "empty reply"
    refused = ask(llm_server, Reply(None, refusal="I can't help with that."))
    assert refused.code is None and refused.reason.startswith("the model refused")
    garbage = ask(llm_server, Reply(replies.GARBAGE))
    assert "no code" in garbage.reason and garbage.reply == replies.GARBAGE  # kept: RUN_DIR/replies/
    assert cut.reply == replies.FAST[:120] and refused.reply is None
    rejected = ask(llm_server, Reply(status=400, error="the prompt is over the context"))
    assert rejected.code is None and "rejected the request" in rejected.llm_error


def test_endpoint_faults_through_every_retry_are_raised_not_scored(llm_server):
    """A 5xx (or an empty, unparsable, truncated reply) through every retry is the endpoint's
    fault: it raises for the episode to stop the operator, never a Proposal to judge."""
    with pytest.raises(LLMUnavailable, match="failed after 2 tries"):
        ask(llm_server, Reply(status=503), Reply(status=503))
    with pytest.raises(LLMUnavailable, match="empty reply: no choices"):
        ask(llm_server, Reply(fault="empty_choices"), Reply(fault="empty_choices"))


def test_review_and_lesson_parsing(llm_server):
    review = ask(llm_server, Reply("**VERDICT: HACK**\nIt returns the input."), call="review")
    assert review.verdict == "hack" and "returns the input" in review.reasoning
    assert ask(llm_server, Reply("verdict: legitimate"), call="review").verdict == "legitimate"
    assert ask(llm_server, Reply("Hard to say."), call="review").verdict == "unsure"
    assert ask(llm_server, Reply(status=500), Reply(status=500), call="review").verdict == "unsure"
    lesson = ask(llm_server, Reply("```\n`y` was never declared; use `x`.\n```"), call="lesson")
    assert lesson.text == "`y` was never declared; use `x`."


def test_each_draft_is_asked_with_a_seed_of_its_own_recorded_on_the_proposal(llm_server):
    """Issue 64.5: the request carries the draw's sampling seed and the proposal records it; one
    llm.seed gives the same sequence of seeds run after run; off, no seed is sent."""

    def seeds_of(**config):
        llm_server.script(replies.FAST, replies.FAST)
        before = len(llm_server.chat_requests)

        async def go():
            drafter = Drafter(llm_config(llm_server, max_retries=0, repeat_retries=0, **config))
            try:
                return [await drafter.propose(DraftRequest(task=TASK)) for _ in range(2)]
            finally:
                await drafter.aclose()

        proposals = asyncio.run(go())
        sent = [r["body"].get("seed") for r in llm_server.chat_requests[before:]]
        assert sent == [p.sampling_seed for p in proposals]
        return sent

    first, again = seeds_of(seed=7), seeds_of(seed=7)
    assert first == again and first[0] != first[1] and all(isinstance(s, int) for s in first)
    assert seeds_of(seed=8) != first
    assert seeds_of(sampling_seeds=False) == [None, None]


def test_a_named_draw_keeps_its_seed_whatever_was_asked_before(llm_server):
    """With llm.seed set, a request that names its draw (the episode's iteration) is asked with a
    seed of that draw alone: a run resumed or reordered, or another drafter, asks it the same way
    (the worker's stream restarted at every resume, so a resumed benchmark pass drew anew). Stage,
    task, draw and llm.seed each change it; a repeat asked again gets a seed of its own."""
    other = TASK.model_copy(update={"task_id": "19_ReLU6"})

    def seeds_of(requests, seed=7, **config):
        llm_server.script(*[replies.FAST] * len(requests))

        async def go():
            drafter = Drafter(llm_config(llm_server, max_retries=0, repeat_retries=0, seed=seed, **config))
            try:
                return [(await drafter.propose(r)).sampling_seed for r in requests]
            finally:
                await drafter.aclose()

        return asyncio.run(go())

    first = seeds_of([DraftRequest(task=TASK, draw=1), DraftRequest(task=TASK, draw=2),
                      DraftRequest(task=other, draw=1)])
    resumed = seeds_of([DraftRequest(task=other, draw=1), DraftRequest(task=TASK, draw=2)])
    assert len(set(first)) == 3 and resumed == [first[2], first[1]]
    assert seeds_of([DraftRequest(task=TASK, draw=1)], seed=8) != first[:1]
    assert seeds_of([DraftRequest(task=TASK, draw=1)], sampling_seeds=False) == [None]

    llm_server.script(replies.FAST, replies.FAST, replies.SLOW)

    async def refined_and_repeated():
        refiner = Refiner(llm_config(llm_server, max_retries=0, repeat_retries=1, seed=7))
        fast = extract_code(replies.FAST, "kernel").code
        try:
            start = StartPoint(id="t", code=fast, latency_ms=1.0)
            plain = await refiner.propose(RefineRequest(task=TASK, start=start, best_latency_ms=1.0, draw=1))
            repeated = await refiner.propose(RefineRequest(task=TASK, start=start, best_latency_ms=1.0, draw=1,
                                                           avoid=[code_fingerprint(fast)]))
            return plain.sampling_seed, repeated.sampling_seed
        finally:
            await refiner.aclose()

    refined, asked_again = asyncio.run(refined_and_repeated())
    assert refined != first[0]  # the refine stage's draw 1 is not the draft's
    sent = [r["body"].get("seed") for r in llm_server.chat_requests[-3:]]
    assert sent == [refined, refined, asked_again] and asked_again != refined
