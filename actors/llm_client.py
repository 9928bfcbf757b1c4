"""An OpenAI-compatible chat client with our own retry policy, a concurrency cap and token counts.

The `openai` package does the HTTP (max_retries=0); this module decides what is retried
(429, 5xx, timeouts, connection errors, and replies that are no completion: an empty `choices`,
a body that is not JSON, a body cut short; exponential backoff with full jitter, Retry-After
honoured), what is fatal (a wrong key, an unknown model: distinct exception types), and
never lets the API key into an error message or a log line. A reply that is no completion (or
one far beyond the max_tokens asked for: the endpoint ignored the limit) is
the endpoint's fault, never the model's answer: when its retries run out it raises
LLMUnavailable like a 5xx, and the episode stops the operator as infrastructure. What the
endpoint billed for such replies (its `usage`) still counts: a reply's token figures hold every
try of its request, and an error raised after replies came back carries theirs
(`billed_tokens`). A reply that is a tool call and no text (a server that parses the model's
output into tool calls, though no tool was offered) is said as such (LLMToolCallReply).
"""

from __future__ import annotations

import asyncio
import os
import random
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import openai
import structlog
from pydantic import BaseModel

from actors.config import LLMConfig
from actors.llm_replies import (
    cut_short,
    not_a_completion,
    oversized,
    retry_after_s,
    server_message,
    tool_call_only,
    usage,
)

log = structlog.get_logger("evokernel.llm")

_KEY_SHAPE = re.compile(r"(sk-[A-Za-z0-9_\-*]{4,}|Bearer\s+\S+)")
# After a try timed out, the endpoint's /models must answer within this for the next try.
SILENT_PROBE_S = 5.0
# Local servers (llama.cpp, vLLM without --api-key) accept any key; the client insists on one.
PLACEHOLDER_KEY = "not-needed"
# A code answer ends at its block's closing fence (issue 42): what a small model writes after
# it (explanations, a second version) is generation time for nothing, and pushed Ascend C
# answers to max_tokens. The opening fence ("```cpp\n") never matches this; the server leaves
# the stop string out of the reply, so `close_stopped_fence` puts the fence back.
CODE_STOP = ["\n```\n"]
_FENCE_LINE = re.compile(r"^[ \t]*```", re.MULTILINE)


def close_stopped_fence(text: str, finish_reason: str | None) -> str:
    """`text` with its last code block closed when the reply stopped (not cut at max_tokens)
    inside it: the stop sequence was the closing fence."""
    if finish_reason == "stop" and len(_FENCE_LINE.findall(text)) % 2 == 1:
        return text.rstrip("\n") + "\n```"
    return text


class LLMError(Exception):
    """Base of every LLM failure the client raises. One raised after the endpoint answered (a
    reply that was no completion, oversized, a tool call) has `tokens_prompt` and
    `tokens_completion` set to what the endpoint billed for those answers (`billed_tokens`)."""


def billed_tokens(exc: BaseException) -> tuple[int, int]:
    """(prompt, completion) tokens the endpoint billed for the answers behind EXC (0, 0 when none
    came back). Read as attributes, so a Ray error wrapping an LLMError answers too."""
    return int(getattr(exc, "tokens_prompt", 0) or 0), int(getattr(exc, "tokens_completion", 0) or 0)


def _billed(exc: LLMError, billed: list[int]) -> LLMError:
    exc.tokens_prompt, exc.tokens_completion = billed  # type: ignore[attr-defined]
    return exc


class LLMAuthError(LLMError):
    """The endpoint refused the key (401/403). Fatal: retrying cannot help."""


class LLMModelNotFound(LLMError):
    """The endpoint does not serve the model (404). Fatal."""


class LLMUnreachable(LLMError):
    """No connection could be made to the endpoint, retries included."""


class LLMRequestRejected(LLMError):
    """The endpoint rejected the request itself (400/413/422: e.g. a prompt over the context)."""


class LLMUnavailable(LLMError):
    """Rate limits, 5xx or timeouts persisted through every retry: this request failed."""


class LLMToolCallReply(LLMRequestRejected):
    """The endpoint answered with a tool call and no text, though the request offered no tool: it
    turns the model's output into tool calls. Not retried (it will do it again); the attempt is
    the endpoint's (gate `llm`), not the model's."""


class TokenUsage(BaseModel):
    """Tokens spent, summed over calls; and the endpoint faults retried (the campaign shows each)."""

    prompt: int = 0
    completion: int = 0
    calls: int = 0
    retries: int = 0
    last_retry: str = ""  # one line: what went wrong and when the next try is

    @property
    def total(self) -> int:
        return self.prompt + self.completion

    def add(self, prompt: int, completion: int) -> None:
        self.prompt += prompt
        self.completion += completion
        self.calls += 1


@dataclass(frozen=True)
class ChatReply:
    """One completion: the text, why it stopped, and what it cost."""

    text: str
    finish_reason: str | None
    prompt_tokens: int
    completion_tokens: int
    refusal: str | None = None
    attempts: int = 1
    wall_s: float = 0.0

    @property
    def truncated(self) -> bool:
        return self.finish_reason == "length"


def resolve_api_key(config: LLMConfig) -> str:
    """The configured key, else $OPENAI_API_KEY, else a placeholder that local servers accept."""
    if config.api_key is not None and config.api_key.get_secret_value():
        return config.api_key.get_secret_value()
    return os.environ.get("OPENAI_API_KEY") or PLACEHOLDER_KEY


class LLMClient:
    """Chat completions against one endpoint and model, retried by our policy."""

    def __init__(
        self,
        config: LLMConfig,
        *,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        rng: random.Random | None = None,
    ):
        if not config.base_url:
            raise ValueError("LLMClient needs llm.base_url (the local model server provides one when unset)")
        self.config = config
        self._key = resolve_api_key(config)
        self._client = openai.AsyncOpenAI(
            api_key=self._key, base_url=config.base_url, timeout=config.timeout_s, max_retries=0
        )
        self._semaphore = asyncio.Semaphore(config.max_concurrency)
        self._sleep = sleep
        self._rng = rng or random.Random()
        self.usage = TokenUsage()

    async def aclose(self) -> None:
        await self._client.close()

    def _scrub(self, text: str) -> str:
        if self._key and self._key != PLACEHOLDER_KEY:
            text = text.replace(self._key, "**********")
        return _KEY_SHAPE.sub("**********", text)

    def backoff_s(self, retry: int, retry_after: float | None = None) -> float:
        """Delay before retry number `retry` (0-based): full jitter over base * 2^retry, capped."""
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.config.backoff_max_s)
        ceiling = min(self.config.backoff_base_s * (2**retry), self.config.backoff_max_s)
        return self._rng.uniform(ceiling / 2, ceiling)

    async def chat(
        self, messages: list[dict[str, str]], *, max_tokens: int | None = None, temperature: float | None = None,
        code_answer: bool = False, seed: int | None = None,
    ) -> ChatReply:
        """One completion; raises an LLMError subclass when no reply could be had. `code_answer`:
        the reply is one code block, and generation stops at its closing fence (CODE_STOP). `seed`:
        the sampling seed sent with the request (every try of it), none when unset."""
        started = time.monotonic()
        billed = [0, 0]  # what the endpoint billed for every answer of this request, faults included
        async with self._semaphore:
            last_problem = ""
            for attempt in range(self.config.max_retries + 1):
                try:
                    # timeout_s bounds the whole try: httpx's own timeout bounds each read only, and
                    # a server trickling a byte every few seconds would hold the request for ever.
                    response = await asyncio.wait_for(self._client.chat.completions.create(
                        model=self.config.model,
                        messages=messages,  # type: ignore[arg-type]
                        max_tokens=max_tokens or self.config.max_tokens,
                        stop=CODE_STOP if code_answer else openai.NOT_GIVEN,
                        temperature=self.config.temperature if temperature is None else temperature,
                        seed=openai.NOT_GIVEN if seed is None else seed,
                    ), self.config.timeout_s)
                except openai.APIStatusError as exc:
                    problem, fatal = self._classify_status(exc)
                    if fatal is not None:
                        raise fatal from None
                    last_problem, retry_after = problem, retry_after_s(exc)
                except (openai.APITimeoutError, TimeoutError):
                    last_problem, retry_after = f"timed out after {self.config.timeout_s:g}s", None
                    if attempt < self.config.max_retries and not await asyncio.to_thread(
                            llm_reachable, self.config.base_url, SILENT_PROBE_S):
                        # Not even /models answers: a silent server, not a slow one. Retrying would
                        # cost timeout_s per try (12 minutes with the defaults) for nothing.
                        last_problem += f", and its /models did not answer within {SILENT_PROBE_S:g} s"
                        break
                except openai.APIConnectionError as exc:
                    if cut_short(exc):
                        last_problem, retry_after = "truncated reply: the body stopped before its end", None
                    else:
                        last_problem, retry_after = f"connection failed: {self._scrub(str(exc))}", None
                except (ValueError, openai.APIResponseValidationError) as exc:  # json.JSONDecodeError is a ValueError
                    last_problem = f"unparsable reply: {type(exc).__name__}: {self._scrub(str(exc))[:150]}"
                    retry_after = None
                else:
                    prompt_tokens, completion_tokens = usage(response)
                    billed[0] += prompt_tokens
                    billed[1] += completion_tokens
                    fault = not_a_completion(response) or oversized(response, max_tokens or self.config.max_tokens)
                    if fault is None and (tool := tool_call_only(response)) is not None:
                        self.usage.add(*billed)
                        raise _billed(LLMToolCallReply(
                            f"the LLM endpoint {self.config.base_url} answered with a tool call ({tool}) and no text, "
                            "though no tool was offered: it turns the model's output into tool calls (a server "
                            "started with a tool-call parser, e.g. vLLM's --enable-auto-tool-choice); serve the "
                            "model without one: EvoKernel reads plain text"), billed)
                    if fault is None:
                        return self._reply(response, attempt + 1, time.monotonic() - started, billed)
                    last_problem, retry_after = fault, None
                if attempt == self.config.max_retries:
                    break
                delay = self.backoff_s(attempt, retry_after)
                self.usage.retries += 1
                self.usage.last_retry = (f"{last_problem}; try {attempt + 2} of {self.config.max_retries + 1} "
                                         f"in {delay:.1f} s")
                log.warning("llm_retry", problem=last_problem, retry=attempt + 1, delay_s=round(delay, 2))
                await self._sleep(delay)
        where = f"{self.config.base_url} (model {self.config.model})"
        if any(billed):  # answers that were no completion still cost what the endpoint says they did
            self.usage.add(*billed)
        if last_problem.startswith("connection failed"):
            raise _billed(LLMUnreachable(
                f"cannot reach the LLM endpoint {where}: {last_problem}; "
                "check --llm-base-url and that the server is running"
            ), billed)
        tries = f"{attempt + 1} {'try' if attempt == 0 else 'tries'}"
        spent = f" (billed {sum(billed):,} tokens)" if any(billed) else ""
        raise _billed(LLMUnavailable(f"LLM request to {where} failed after {tries}: {last_problem}{spent}"), billed)

    def _classify_status(self, exc: openai.APIStatusError) -> tuple[str, LLMError | None]:
        """(a one-line problem, the fatal error to raise or None when worth a retry)."""
        status = exc.status_code
        detail = self._scrub(server_message(exc))[:300]
        where = f"{self.config.base_url}"
        if status in (401, 403):
            return "", LLMAuthError(
                f"the LLM endpoint {where} refused the API key (HTTP {status}): {detail}; "
                "set llm.api_key or OPENAI_API_KEY"
            )
        if status == 404:
            return "", LLMModelNotFound(
                f"the LLM endpoint {where} does not know model {self.config.model!r} (HTTP 404): {detail}; "
                "pick one from its /models list with --llm-model"
            )
        if status == 429 or status >= 500 or status == 408:
            return f"HTTP {status}: {detail}", None
        return "", LLMRequestRejected(f"the LLM endpoint {where} rejected the request (HTTP {status}): {detail}")

    def _reply(self, response: object, attempts: int, wall_s: float, billed: list[int]) -> ChatReply:
        """The completion, its token figures those of every try of the request (BILLED)."""
        prompt_tokens, completion_tokens = billed
        self.usage.add(prompt_tokens, completion_tokens)
        choice = response.choices[0]  # type: ignore[attr-defined]  # _not_a_completion checked it
        message = choice.message
        return ChatReply(
            text=close_stopped_fence(message.content or "", choice.finish_reason),
            finish_reason=choice.finish_reason,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            refusal=getattr(message, "refusal", None),
            attempts=attempts,
            wall_s=wall_s,
        )


def llm_reachable(base_url: str | None, timeout_s: float = 5.0) -> bool:
    """Whether the endpoint answers HTTP at all (any status: this checks the connection only)."""
    import urllib.error
    import urllib.request

    if not base_url:
        return False
    try:
        urllib.request.urlopen(base_url.rstrip("/") + "/models", timeout=timeout_s).close()
    except urllib.error.HTTPError:  # an HTTP answer, even 401 or 404: the endpoint is there
        return True
    except (OSError, ValueError):
        return False
    return True


def wait_for_endpoint(base_url: str | None, wait_s: float, poll_s: float = 5.0,
                      say: Callable[[str], None] | None = None) -> bool:
    """Block until the endpoint answers (True) or `wait_s` has passed (False). `say` gets one line
    when the wait starts and one when it ends (the user's terminal; the log has them too)."""
    log.warning("llm_endpoint_lost", waiting_s=wait_s, base_url=base_url)
    if say is not None:
        say(f"the LLM endpoint {base_url} does not answer: waiting up to {wait_s:.0f} s for it (new attempts paused)")
    started = time.monotonic()
    deadline = started + wait_s
    while True:
        if llm_reachable(base_url):
            log.info("llm_endpoint_back")
            if say is not None:
                say(f"the LLM endpoint {base_url} answers again after {time.monotonic() - started:.0f} s")
            return True
        left = deadline - time.monotonic()
        if left <= 0:
            if say is not None:
                say(f"the LLM endpoint {base_url} did not come back within {wait_s:.0f} s")
            return False
        time.sleep(min(poll_s, left))
