"""What an endpoint's answer or fault says (actors/llm_client.py asks; these read): the billed
tokens, a reply that is no completion, a tool call instead of text, an oversized reply, a body cut
short, the server's message and its Retry-After."""

from __future__ import annotations

import openai


def usage(response: object) -> tuple[int, int]:
    """(prompt, completion) tokens of a reply by the endpoint's own `usage` (0 where it gives none)."""
    usage = getattr(response, "usage", None)
    return int(getattr(usage, "prompt_tokens", 0) or 0), int(getattr(usage, "completion_tokens", 0) or 0)


def tool_call_only(response: object) -> str | None:
    """The tool call(s) a completion holds instead of text (their function names), or None."""
    message = response.choices[0].message  # type: ignore[attr-defined]  # a completion
    calls = getattr(message, "tool_calls", None) or []
    if not calls or (message.content or "").strip():
        return None
    names = [getattr(getattr(call, "function", None), "name", None) or "?" for call in calls]
    return ", ".join(dict.fromkeys(names))[:200]


def not_a_completion(response: object) -> str | None:
    """Why a 200 reply is no completion (an endpoint fault, retried), or None when it is one."""
    if isinstance(response, (str, bytes)) or not hasattr(response, "choices"):
        return "unparsable reply: the body is not JSON (an error page of a proxy?)"
    if not response.choices:
        return "empty reply: no choices"
    if getattr(response.choices[0], "message", None) is None:
        return "empty reply: a choice without a message"
    return None


# A reply far beyond the max_tokens asked for is the endpoint's fault (it ignored the limit, or
# a proxy padded the body), not the model's answer: issue 55 saw a 5 MB reply counted as 2.5
# million tokens against max_tokens 2048. "Far": more than twice the limit by the endpoint's own
# usage, or more characters than any tokenizer makes of that many tokens.
_OVER_MAX_TOKENS = 2
_MAX_CHARS_PER_TOKEN = 32


def oversized(response: object, max_tokens: int) -> str | None:
    """Why a completion is an endpoint fault by its size, or None."""
    text = response.choices[0].message.content or ""  # type: ignore[attr-defined]  # a completion
    usage = getattr(response, "usage", None)
    tokens = int(getattr(usage, "completion_tokens", 0) or 0)
    if tokens > _OVER_MAX_TOKENS * max_tokens or len(text) > _MAX_CHARS_PER_TOKEN * max_tokens:
        counted = f", {tokens:,} tokens by its usage" if tokens else ""
        return (f"oversized reply: {len(text):,} characters{counted} for max_tokens {max_tokens:,} "
                "(the endpoint did not honour max_tokens)")
    return None


def cut_short(exc: openai.APIConnectionError) -> bool:
    """The connection closed in the middle of the reply's body (httpx's RemoteProtocolError)."""
    cause = exc.__cause__
    return type(cause).__name__ == "RemoteProtocolError" or "incomplete" in str(cause or "").lower()


def server_message(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
        if isinstance(inner, str):
            return inner
    return str(exc.message or "").splitlines()[0] if exc.message else ""


def retry_after_s(exc: openai.APIStatusError) -> float | None:
    value = exc.response.headers.get("retry-after") if exc.response is not None else None
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None
