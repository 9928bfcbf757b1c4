"""The LLM client against a real HTTP server: retries, fatal errors, token counts, no leaked keys."""

from __future__ import annotations

import asyncio
import random

import pytest
from pydantic import SecretStr

from actors.config import LLMConfig
from actors.llm_client import (
    LLMAuthError,
    LLMClient,
    LLMModelNotFound,
    LLMRequestRejected,
    LLMUnavailable,
    LLMUnreachable,
    billed_tokens,
)
from tests.actors.openai_server import OpenAITestServer, Reply

SECRET = "sk-test-SECRET-0123456789abcdef"
MESSAGES = [{"role": "user", "content": "hello"}]


def config(server: OpenAITestServer, **overrides) -> LLMConfig:
    values = dict(base_url=server.base_url, model=server.model, api_key=SecretStr(SECRET), timeout_s=2.0,
                  max_retries=3, backoff_base_s=0.01, backoff_max_s=0.05)
    values.update(overrides)
    return LLMConfig(**values)


async def chat(cfg: LLMConfig, **kwargs):
    client = LLMClient(cfg)
    try:
        return await client.chat(MESSAGES), client
    finally:
        await client.aclose()


def test_reply_and_token_accounting(llm_server):
    llm_server.script(Reply("hi there", prompt_tokens=11, completion_tokens=3))
    reply, client = asyncio.run(chat(config(llm_server)))
    assert reply.text == "hi there" and reply.finish_reason == "stop"
    assert (reply.prompt_tokens, reply.completion_tokens) == (11, 3)
    assert client.usage.total == 14 and client.usage.calls == 1
    request = llm_server.chat_requests[0]
    assert request["headers"]["Authorization"] == f"Bearer {SECRET}"
    assert request["body"]["model"] == "test-model" and request["body"]["max_tokens"] == 2048


def test_retries_429_and_5xx_then_succeeds(llm_server):
    llm_server.script(Reply(status=429, retry_after=0.01), Reply(status=500), Reply(status=503), "finally")
    reply, _ = asyncio.run(chat(config(llm_server)))
    assert reply.text == "finally" and reply.attempts == 4
    assert len(llm_server.chat_requests) == 4


def test_timeouts_are_retried_then_reported(llm_server):
    llm_server.script(Reply("slow", delay_s=1.0), "fast")
    reply, _ = asyncio.run(chat(config(llm_server, timeout_s=0.3)))
    assert reply.text == "fast" and reply.attempts == 2
    llm_server.script(*[Reply("slow", delay_s=1.0)] * 2)
    with pytest.raises(LLMUnavailable, match="timed out"):
        asyncio.run(chat(config(llm_server, timeout_s=0.3, max_retries=1)))


def test_retries_exhausted_is_one_failed_request(llm_server):
    llm_server.script(*[Reply(status=500, error="overloaded")] * 3)
    with pytest.raises(LLMUnavailable, match="after 3 tries: HTTP 500: overloaded"):
        asyncio.run(chat(config(llm_server, max_retries=2)))


def test_wrong_key_is_fatal_and_never_printed():
    with OpenAITestServer(api_key="sk-the-right-key-0000") as server:
        with pytest.raises(LLMAuthError) as exc:
            asyncio.run(chat(config(server)))
        assert len(server.chat_requests) == 1  # no retry of a 401
    assert "refused the API key" in str(exc.value)
    assert SECRET not in str(exc.value) and "sk-" not in str(exc.value)


def test_unknown_model_is_fatal(llm_server):
    with pytest.raises(LLMModelNotFound, match="does not know model 'no-such-model'"):
        asyncio.run(chat(config(llm_server, model="no-such-model")))
    assert len(llm_server.chat_requests) == 1


def test_bad_request_is_not_retried(llm_server):
    llm_server.script(Reply(status=400, error="context length exceeded"))
    with pytest.raises(LLMRequestRejected, match="context length exceeded"):
        asyncio.run(chat(config(llm_server)))
    assert len(llm_server.chat_requests) == 1


def test_unreachable_endpoint():
    with OpenAITestServer() as server:
        url = server.base_url  # a port that was just freed: nothing listens there
    cfg = LLMConfig(base_url=url, model="m", api_key=SecretStr(SECRET), max_retries=1, backoff_base_s=0.01)
    with pytest.raises(LLMUnreachable) as exc:
        asyncio.run(chat(cfg))
    assert "cannot reach the LLM endpoint" in str(exc.value) and SECRET not in str(exc.value)


def test_key_falls_back_to_environment(llm_server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-environment-1234")
    llm_server.script("ok")
    asyncio.run(chat(config(llm_server, api_key=None)))
    assert llm_server.chat_requests[0]["headers"]["Authorization"] == "Bearer sk-from-the-environment-1234"


def test_backoff_grows_with_jitter_and_honours_retry_after():
    cfg = LLMConfig(base_url="http://127.0.0.1:9/v1", backoff_base_s=1.0, backoff_max_s=8.0)
    client = LLMClient(cfg, rng=random.Random(0))
    delays = [client.backoff_s(i) for i in range(6)]
    for i, delay in enumerate(delays):
        ceiling = min(2.0**i, 8.0)
        assert ceiling / 2 <= delay <= ceiling
    assert client.backoff_s(0, retry_after=3.0) == 3.0
    assert client.backoff_s(0, retry_after=100.0) == 8.0


def test_concurrency_is_capped(llm_server):
    llm_server.default = Reply("ok", delay_s=0.2)

    async def burst():
        client = LLMClient(config(llm_server, max_concurrency=2))
        try:
            await asyncio.gather(*(client.chat(MESSAGES) for _ in range(5)))
        finally:
            await client.aclose()

    asyncio.run(burst())
    assert len(llm_server.chat_requests) == 5 and llm_server.max_in_flight == 2


@pytest.mark.parametrize("fault", ["empty_choices", "not_json", "bad_json", "truncated"])
def test_replies_that_are_no_completion_are_endpoint_faults_retried(llm_server, fault):
    llm_server.script(Reply(fault=fault), Reply(fault=fault), "finally")
    reply, client = asyncio.run(chat(config(llm_server)))
    assert reply.text == "finally" and reply.attempts == 3 and len(llm_server.chat_requests) == 3
    assert client.usage.retries == 2 and "try 3 of 4" in client.usage.last_retry
    assert "\n" not in client.usage.last_retry


@pytest.mark.parametrize(("fault", "said"), [("empty_choices", "empty reply: no choices"),
                                             ("not_json", "the body is not JSON"),
                                             ("bad_json", "unparsable reply: JSONDecodeError"),
                                             ("truncated", "truncated reply")])
def test_endpoint_faults_through_every_retry_are_one_failed_request(llm_server, fault, said):
    llm_server.default = Reply(fault=fault)
    with pytest.raises(LLMUnavailable) as failed:
        asyncio.run(chat(config(llm_server, max_retries=2)))
    assert "failed after 3 tries" in str(failed.value) and said in str(failed.value)
    assert len(llm_server.chat_requests) == 3


def test_a_reply_far_beyond_max_tokens_is_an_endpoint_fault(llm_server):
    """Issue 55: a 5 MB reply was counted as 2.5 million tokens against max_tokens 2048 and
    taken as the model's answer. Retried as an endpoint fault; through every retry, one failed
    request (the operator stops as infrastructure, resumable), never a verdict on the model."""
    flood = "x" * (5 * 2**20)
    llm_server.script(Reply(flood, prompt_tokens=10, completion_tokens=1_310_720),
                      Reply(flood, prompt_tokens=10, completion_tokens=2_500_200),
                      Reply("finally", prompt_tokens=10, completion_tokens=2))
    reply, client = asyncio.run(chat(config(llm_server)))
    assert reply.text == "finally" and reply.attempts == 3
    assert "oversized reply" in client.usage.last_retry and "max_tokens 2,048" in client.usage.last_retry
    # What the endpoint billed for the floods counts (issue 63: the run said "0 tokens" after 6 x 1.25 M)
    assert (reply.prompt_tokens, reply.completion_tokens) == (30, 1_310_720 + 2_500_200 + 2)
    assert client.usage.total == 30 + 1_310_720 + 2_500_200 + 2
    llm_server.default = Reply("y" * 20_000, prompt_tokens=7, completion_tokens=5000)  # by the endpoint's usage alone
    with pytest.raises(LLMUnavailable) as failed:
        asyncio.run(chat(config(llm_server, max_retries=1)))
    assert "oversized reply" in str(failed.value) and "5,000 tokens by its usage" in str(failed.value)
    assert billed_tokens(failed.value) == (14, 10_000) and "(billed 10,014 tokens)" in str(failed.value)


def test_a_tool_call_and_no_text_is_said_as_such(llm_server):
    """Issue 63: an endpoint that parses the model's output into tool calls answered with a tool
    call and no content; the run's hint said to switch --candidate-format. The client says what it
    is, once (not retried: the server will do it again), with what it billed."""
    from actors.llm_client import LLMToolCallReply

    llm_server.default = Reply(None, finish_reason="tool_calls", tool_calls=["write_kernel"], prompt_tokens=40,
                               completion_tokens=12)
    with pytest.raises(LLMToolCallReply) as failed:
        asyncio.run(chat(config(llm_server)))
    assert isinstance(failed.value, LLMRequestRejected) and len(llm_server.chat_requests) == 1
    said = str(failed.value)
    assert "answered with a tool call (write_kernel) and no text" in said and "tool-call parser" in said
    assert billed_tokens(failed.value) == (40, 12)
    llm_server.script(Reply("the kernel is below", tool_calls=["write_kernel"]))  # text and a call: the text stands
    reply, _ = asyncio.run(chat(config(llm_server)))
    assert reply.text == "the kernel is below"


def test_a_reply_at_max_tokens_is_the_models_answer(llm_server):
    llm_server.script(Reply("z" * 8000, finish_reason="length", completion_tokens=2048))
    reply, _ = asyncio.run(chat(config(llm_server)))
    assert reply.truncated and reply.completion_tokens == 2048
