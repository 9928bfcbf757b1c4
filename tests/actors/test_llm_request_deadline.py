"""llm.timeout_s bounds a whole request try, not each read: a loopback server that trickles its
reply a byte at a time is cut at the deadline, and a silent server (not even /models answers)
costs one try, not every retry."""

from __future__ import annotations

import asyncio
import socket
import threading
import time

import pytest

import actors.llm_client as llm_client
from actors.config import LLMConfig
from actors.llm_client import LLMClient, LLMUnavailable

BODY = b'{"id":"x","object":"chat.completion","created":0,"model":"m","choices":[]}'


class TricklingServer:
    """HTTP on loopback: chat completions trickle one byte every `pause_s`; /models answers at
    once (an alive, slow server) unless `silent`, where nothing is ever answered."""

    def __init__(self, pause_s: float, silent: bool = False):
        self.pause_s, self.silent = pause_s, silent
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(0.2)
        self.chat_requests = 0
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.listener.getsockname()[1]}/v1"

    def __enter__(self) -> TricklingServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        self.thread.join(5)
        self.listener.close()

    def _serve(self) -> None:
        while not self.stopping.is_set():
            try:
                conn, _ = self.listener.accept()
            except TimeoutError:
                continue
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        with conn:
            request = conn.recv(65536)
            if self.silent:
                self.stopping.wait(30)
                return
            if b"/models" in request.split(b"\r\n", 1)[0]:
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n"
                             b"Connection: close\r\n\r\n{}")
                return
            self.chat_requests += 1
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                         b"Content-Length: %d\r\n\r\n" % len(BODY))
            for byte in BODY:
                if self.stopping.wait(self.pause_s):
                    return
                try:
                    conn.sendall(bytes([byte]))
                except OSError:  # the client gave up: what the deadline is for
                    return


def config(server: TricklingServer, **overrides) -> LLMConfig:
    values = dict(base_url=server.base_url, model="m", timeout_s=1.0, max_retries=1, backoff_base_s=0.01,
                  backoff_max_s=0.05)
    return LLMConfig(**{**values, **overrides})


async def chat(cfg: LLMConfig):
    client = LLMClient(cfg)
    try:
        return await client.chat([{"role": "user", "content": "hello"}])
    finally:
        await client.aclose()


def test_a_trickling_reply_is_cut_at_the_deadline_of_each_try():
    # Each byte comes well inside httpx's read timeout, so only a deadline on the whole try ends it.
    with TricklingServer(pause_s=0.3) as server:
        started = time.monotonic()
        with pytest.raises(LLMUnavailable, match=r"failed after 2 tries: timed out after 1s"):
            asyncio.run(chat(config(server)))
        elapsed = time.monotonic() - started
    assert server.chat_requests == 2
    assert elapsed < 2 * 1.0 + 1.5, elapsed  # two tries of 1 s, not len(BODY) * 0.3 s each


def test_a_silent_server_costs_one_try_not_every_retry(monkeypatch):
    monkeypatch.setattr(llm_client, "SILENT_PROBE_S", 0.5)
    with TricklingServer(pause_s=0.3, silent=True) as server:
        started = time.monotonic()
        with pytest.raises(LLMUnavailable) as failed:
            asyncio.run(chat(config(server, max_retries=5)))
        elapsed = time.monotonic() - started
    assert "failed after 1 try: timed out after 1s, and its /models did not answer within 0.5 s" in str(failed.value)
    assert elapsed < 1.0 + 0.5 + 1.5, elapsed
