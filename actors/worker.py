"""What the drafter and the refiner share: prompt -> LLM -> code, plus lessons and reviews.

Every way the model's reply can disappoint (truncated at max_tokens, refused, no code, a
request rejected as too long) becomes a Proposal with a reason, never an exception. The
endpoint's faults raise: configuration mistakes (a wrong key, an unknown model), an unreachable
endpoint, and LLMUnavailable once the retries of a 5xx, 429, timeout, empty or unparsable reply
ran out; the episode stops the operator as infrastructure instead of scoring an attempt.
Lessons and reviews are extras: their failures are swallowed.
"""

from __future__ import annotations

import random
import re

from actors.code_extraction import code_fingerprint, extract_code
from actors.config import LLMConfig
from actors.llm_client import (
    ChatReply,
    LLMClient,
    LLMRequestRejected,
    LLMUnavailable,
    TokenUsage,
    billed_tokens,
)
from actors.messages import CandidateFormat, Lesson, LessonRequest, Proposal, Review, ReviewRequest
from actors.prompt_templates import template
from actors.prompting import Messages, Prompt, PromptBuilder

_VERDICT = re.compile(r"VERDICT\s*[:=]?\s*\**\s*(LEGITIMATE|HACK)", re.IGNORECASE)
_FENCE_LINE = re.compile(r"^\s*(`{3,}|~{3,}).*$", re.MULTILINE)


class LLMWorker:
    """An LLM client and the prompt builders; each request's task names its candidate format."""

    def __init__(self, config: LLMConfig, client: LLMClient | None = None):
        self.config = config
        self.client = client or LLMClient(config)
        self._builders: dict[CandidateFormat, PromptBuilder] = {}
        # Each draft or refinement asks with a seed of its own, recorded with the attempt (issue 64.5:
        # a benchmark's drafts say which draw each was, and equal kernels from distinct draws show).
        # A request that names its draw gets a seed keyed on it (_seed); others take the next of
        # this stream, which starts again with the worker
        self._seeds = random.Random(config.seed)

    def prompts(self, fmt: CandidateFormat) -> PromptBuilder:
        if fmt not in self._builders:
            self._builders[fmt] = PromptBuilder(self.config, fmt)
        return self._builders[fmt]

    def usage(self) -> TokenUsage:
        return self.client.usage.model_copy()

    async def aclose(self) -> None:
        await self.client.aclose()

    def _seed(self, key: tuple[str, str, int | None], ask: int) -> int | None:
        """The sampling seed of a request's ask-th ask (0 first, then each repeat asked again): none
        when seeds are off; with llm.seed set and the draw named, a function of llm.seed, the key
        and the ask alone, so a run resumed, reordered or spread over several drafters asks every
        draw with the seed it had (a stream starts again with its worker: a benchmark pass resumed
        mid-way drew anew, 2026-12-07); otherwise the next of the worker's stream (fresh each run
        where llm.seed is unset)."""
        if not self.config.sampling_seeds:
            return None
        if self.config.seed is None or key[-1] is None:
            return self._seeds.randrange(2**31)
        return random.Random(repr((self.config.seed, *key, ask))).randrange(2**31)  # a str seeds through sha512

    async def _generate(self, prompt: Prompt, fmt: CandidateFormat, avoid: list[str],
                        key: tuple[str, str, int | None]) -> Proposal:
        """A proposal; one that repeats an attempt in `avoid` is asked again, hotter (small
        models, shown their last attempt, often copy it back unchanged). It names the memory
        items its prompt showed: the attempt's credit goes to exactly those. `key` (stage, task,
        draw) is what its sampling seeds are keyed on."""
        messages, prompt_truncated = prompt.messages, prompt.truncated
        proposal = await self._ask(messages, prompt_truncated, fmt, seed=self._seed(key, 0))
        seen = set(avoid)
        for retry in range(1, self.config.repeat_retries + 1):
            if proposal.code is None or code_fingerprint(proposal.code) not in seen:
                break
            again = [*messages, {"role": "assistant", "content": f"```{self.prompts(fmt).lang}\n{proposal.code}\n```"},
                     {"role": "user", "content": template("repeat").strip()}]
            temperature = min(2.0, self.config.temperature + retry * self.config.repeat_temperature_step)
            retried = await self._ask(again, prompt_truncated, fmt, temperature, self._seed(key, retry))
            retried.tokens_prompt += proposal.tokens_prompt
            retried.tokens_completion += proposal.tokens_completion
            proposal = retried
        return proposal.model_copy(update={"shown_ids": prompt.shown_ids, "example_id": prompt.example_id})

    async def _ask(self, messages: Messages, prompt_truncated: bool, fmt: CandidateFormat,
                   temperature: float | None = None, seed: int | None = None) -> Proposal:
        try:
            reply = await self.client.chat(messages, temperature=temperature, code_answer=True, seed=seed)
        except LLMRequestRejected as exc:  # LLMUnavailable propagates: infrastructure, not a verdict
            prompt_tokens, completion_tokens = billed_tokens(exc)  # a tool-call reply was still billed
            return Proposal(llm_error=str(exc), prompt_truncated=prompt_truncated, tokens_prompt=prompt_tokens,
                            tokens_completion=completion_tokens, sampling_seed=seed)
        proposal = Proposal(finish_reason=reply.finish_reason, tokens_prompt=reply.prompt_tokens,
                            tokens_completion=reply.completion_tokens, prompt_truncated=prompt_truncated,
                            sampling_seed=seed)
        if reply.refusal:
            proposal.reason = f"the model refused: {reply.refusal.strip()[:200]}"
            return proposal
        extraction = extract_code(reply.text, fmt)
        if extraction.code is None:
            suffix = " (the reply hit max_tokens)" if reply.truncated else ""
            proposal.reason = f"{extraction.reason}{suffix}"
            proposal.reply = reply.text or None  # what the model wrote instead: RUN_DIR/replies/
        proposal.code = extraction.code
        return proposal

    async def lesson(self, request: LessonRequest) -> Lesson:
        """A few lines on why an attempt failed or what made it faster; no text when the LLM fails."""
        reply = await self._quiet_chat(self.prompts(request.task.candidate_format).lesson(request),
                                        self.config.lesson_max_tokens)
        if reply is None:
            return Lesson()
        text = _FENCE_LINE.sub("", reply.text).strip()
        return Lesson(text=text[:self.config.lesson_max_chars] or None, tokens_prompt=reply.prompt_tokens,
                      tokens_completion=reply.completion_tokens)

    async def review(self, request: ReviewRequest) -> Review:
        """LEGITIMATE or HACK for a flagged attempt; `unsure` when the reply says neither."""
        reply = await self._quiet_chat(self.prompts(request.task.candidate_format).review(request),
                                        self.config.review_max_tokens)
        if reply is None:
            return Review(verdict="unsure", reasoning="the review request failed")
        match = _VERDICT.search(reply.text)
        verdict = match.group(1).lower() if match else "unsure"
        reasoning = _VERDICT.sub("", reply.text, count=1).strip()[:1000]
        return Review(verdict=verdict, reasoning=reasoning, tokens_prompt=reply.prompt_tokens,
                      tokens_completion=reply.completion_tokens)

    async def _quiet_chat(self, messages: Messages, max_tokens: int) -> ChatReply | None:
        try:
            return await self.client.chat(messages, max_tokens=max_tokens, temperature=0.2)
        except (LLMUnavailable, LLMRequestRejected):
            return None


class WorkerActorBase:
    """The body of a Ray actor around an LLMWorker subclass (DrafterActor, RefinerActor)."""

    worker_class: type[LLMWorker] = LLMWorker

    def __init__(self, config: LLMConfig):
        self._worker = self.worker_class(config)

    def __repr__(self) -> str:
        """What the Ray dashboard's Actors table shows (Repr): the actor's name and its model."""
        import ray

        name = ray.get_runtime_context().get_actor_name() if ray.is_initialized() else None
        return f"{name or type(self).__name__} ({self._worker.config.model})"

    async def propose(self, request):  # noqa: ANN001 - the subclass's request type
        return await self._worker.propose(request)  # type: ignore[attr-defined]

    async def lesson(self, request: LessonRequest) -> Lesson:
        return await self._worker.lesson(request)

    async def review(self, request: ReviewRequest) -> Review:
        return await self._worker.review(request)

    async def usage(self) -> TokenUsage:
        return self._worker.usage()
