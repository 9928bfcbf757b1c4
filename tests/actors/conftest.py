"""Fixtures of the agent's tests: the scripted OpenAI-compatible server on loopback."""

from __future__ import annotations

import pytest

from tests.actors.openai_server import OpenAITestServer


@pytest.fixture
def llm_server():
    with OpenAITestServer() as server:
        yield server
