"""A real HTTP server speaking the OpenAI chat API on loopback, with scripted replies.

The LLM's only test double: tests script what each call answers (content, finish_reason,
an HTTP error, a delay) and read back every request it received. It runs in its own thread
with its own event loop, so sync tests, async tests and Ray actors in other processes all
reach it over real sockets.
"""

from __future__ import annotations

import asyncio
import sys
import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web


@dataclass
class Reply:
    """One scripted answer to /v1/chat/completions."""

    content: str | None = ""
    finish_reason: str = "stop"
    status: int = 200
    error: str = "scripted error"
    delay_s: float = 0.0
    refusal: str | None = None
    retry_after: float | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    # Function names of tool calls in the message (with `content` None: a server that parses the
    # model's output into tool calls although no tool was offered).
    tool_calls: list[str] | None = None
    # An endpoint fault instead of a completion: "empty_choices" (a 200 whose `choices` is []),
    # "not_json" (a 200 with an HTML body, as a proxy's error page), "bad_json" (a 200 that says
    # JSON and is not), "truncated" (the body stops
    # halfway and the connection closes).
    fault: str | None = None


Responder = Callable[[dict[str, Any]], Reply]


@dataclass
class OpenAITestServer:
    """`with OpenAITestServer() as server:` ... `server.base_url` ... `server.script(...)`."""

    model: str = "test-model"
    api_key: str | None = None  # when set, other keys get 401
    requests: list[dict[str, Any]] = field(default_factory=list)
    default: Reply | None = None
    responder: Responder | None = None
    in_flight: int = 0
    max_in_flight: int = 0
    _queue: list[Reply] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def script(self, *replies: Reply | str) -> None:
        """Answer the next calls with these, in order (a str is a plain completion)."""
        with self._lock:
            self._queue.extend(Reply(content=r) if isinstance(r, str) else r for r in replies)

    @property
    def chat_requests(self) -> list[dict[str, Any]]:
        return [r for r in self.requests if r["path"].endswith("/chat/completions")]

    def _next(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            if self._queue:
                return self._queue.pop(0)
        if self.responder is not None:
            return self.responder(body)
        if self.default is not None:
            return self.default
        return Reply(status=500, error="the test script has no reply left")

    # -- HTTP ------------------------------------------------------------------------------

    def _authorised(self, request: web.Request) -> bool:
        return self.api_key is None or request.headers.get("Authorization") == f"Bearer {self.api_key}"

    async def _chat(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.requests.append({"path": request.path, "body": body, "headers": dict(request.headers)})
        if not self._authorised(request):
            return web.json_response({"error": {"message": "Incorrect API key provided", "code": "invalid_api_key"}},
                                     status=401)
        if body.get("model") != self.model:
            return web.json_response({"error": {"message": f"The model `{body.get('model')}` does not exist"}},
                                     status=404)
        reply = self._next(body)
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if reply.delay_s:
                await asyncio.sleep(reply.delay_s)
        finally:
            self.in_flight -= 1
        if reply.status != 200:
            headers = {"retry-after": str(reply.retry_after)} if reply.retry_after is not None else None
            return web.json_response({"error": {"message": reply.error}}, status=reply.status, headers=headers)
        if reply.fault is not None:
            return await self._fault(request, reply.fault)
        prompt_chars = sum(len(m.get("content") or "") for m in body.get("messages", []))
        content = reply.content or ""
        prompt_tokens = reply.prompt_tokens if reply.prompt_tokens is not None else max(1, prompt_chars // 4)
        completion_tokens = reply.completion_tokens if reply.completion_tokens is not None else max(1, len(content) // 4)
        return web.json_response({
            "id": f"chatcmpl-{len(self.requests)}", "object": "chat.completion", "created": 0, "model": self.model,
            "choices": [{"index": 0, "finish_reason": reply.finish_reason,
                         "message": {"role": "assistant", "content": reply.content, "refusal": reply.refusal,
                                     **({"tool_calls": [{"id": f"call-{n}", "type": "function",
                                                         "function": {"name": name, "arguments": "{}"}}
                                                        for n, name in enumerate(reply.tool_calls)]}
                                        if reply.tool_calls else {})}}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens},
        })

    async def _fault(self, request: web.Request, fault: str) -> web.StreamResponse:
        if fault == "empty_choices":
            return web.json_response({"id": "chatcmpl-empty", "object": "chat.completion", "created": 0,
                                      "model": self.model, "choices": []})
        if fault == "not_json":
            return web.Response(text="<html><body>502 Bad Gateway</body></html>", content_type="text/html")
        if fault == "bad_json":
            return web.Response(text='{"id": "chatcmpl-bad", "choices": [', content_type="application/json")
        if fault == "truncated":
            body = b'{"id": "chatcmpl-cut", "object": "chat.completion", "choices": [{"index": 0, "message": {"role"'
            response = web.StreamResponse(headers={"Content-Type": "application/json",
                                                   "Content-Length": str(len(body) * 2)})
            await response.prepare(request)
            await response.write(body)
            request.transport.close()  # the rest never comes
            return response
        raise ValueError(f"unknown scripted fault {fault!r}")

    async def _models(self, request: web.Request) -> web.Response:
        self.requests.append({"path": request.path, "body": None, "headers": dict(request.headers)})
        return web.json_response({"object": "list", "data": [{"id": self.model, "object": "model", "owned_by": "test"}]})

    # -- lifecycle -------------------------------------------------------------------------

    def __enter__(self) -> OpenAITestServer:
        started = threading.Event()
        self._stopping = False
        self._loop = asyncio.new_event_loop()
        stop = self._loop.stop

        def stop_and_say_who() -> None:
            if not self._stopping:
                print("openai-test-server: its event loop was stopped outside __exit__, from:\n"
                      + "".join(traceback.format_stack()), file=sys.__stderr__, flush=True)
            stop()

        async def start() -> None:
            app = web.Application()
            app.router.add_post("/v1/chat/completions", self._chat)
            app.router.add_get("/v1/models", self._models)
            self._runner = web.AppRunner(app)
            await self._runner.setup()
            site = web.TCPSite(self._runner, "127.0.0.1", 0)
            await site.start()
            self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

        def serve() -> None:
            # This thread was seen gone mid-run with nothing printed (pytest's capture holds a
            # thread's traceback until the test ends, and a hung run never ends): say why on the
            # real stderr, so the next time shows the cause.
            try:
                asyncio.set_event_loop(self._loop)
                self._loop.run_until_complete(start())  # (stops the loop itself when done)
                self._loop.stop = stop_and_say_who  # type: ignore[method-assign]
                started.set()
                self._loop.run_forever()
            except BaseException:
                print("openai-test-server thread died:\n" + traceback.format_exc(), file=sys.__stderr__, flush=True)
                raise

        self._thread = threading.Thread(target=serve, name="openai-test-server", daemon=True)
        self._thread.start()
        if not started.wait(10):
            raise RuntimeError("the OpenAI test server did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopping = True
        cleanup = asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop)
        try:
            cleanup.result(5)
        except TimeoutError:  # a scripted delay still sleeping: the daemon thread goes with the loop
            cleanup.cancel()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        # Request tasks still pending (a scripted delay, a client gone) end here: left to a later
        # cyclic GC, their coroutine finalizers ran inside another test (once inside ast.parse:
        # CPython 3.11's "AST constructor recursion depth mismatch" failed test_import_circles).
        if not self._thread.is_alive():
            vars(self._loop).pop("stop", None)
            pending = asyncio.all_tasks(self._loop)
            for task in pending:
                task.cancel()
            if pending:
                self._loop.run_until_complete(asyncio.wait(pending, timeout=5))
            self._loop.close()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"


def last_user_message(body: dict[str, Any]) -> str:
    """The last user turn of a chat request body."""
    return next(m["content"] for m in reversed(body["messages"]) if m["role"] == "user")


def system_message(body: dict[str, Any]) -> str:
    return next((m["content"] for m in body.get("messages", []) if m["role"] == "system"), "")


class ScriptedAgent:
    """A responder: candidate requests get the next scripted reply; lesson and review
    requests (told apart by their system prompt) get their own fixed answers."""

    def __init__(self, candidates: list[Reply | str], lesson: str = "Declare every name you use.",
                 review: str = "VERDICT: LEGITIMATE\nIt computes every element from the input."):
        self.candidates = [Reply(content=c) if isinstance(c, str) else c for c in candidates]
        self.lesson, self.review = lesson, review
        self.kinds: list[str] = []

    def kind_of(self, body: dict[str, Any]) -> str:
        system = system_message(body)
        if "distil short lessons" in system:
            return "lesson"
        if "audit compute kernels" in system:
            return "review"
        return "refine" if "## The current kernel" in last_user_message(body) else "draft"

    def __call__(self, body: dict[str, Any]) -> Reply:
        kind = self.kind_of(body)
        self.kinds.append(kind)
        if kind == "lesson":
            return Reply(self.lesson)
        if kind == "review":
            return Reply(self.review)
        if not self.candidates:
            return Reply(status=500, error="the test script has no candidate left")
        return self.candidates.pop(0)
