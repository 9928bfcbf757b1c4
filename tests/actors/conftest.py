"""Fixtures of the agent's tests: the scripted OpenAI server, a real task, harness and bank."""

from __future__ import annotations

from pathlib import Path

import pytest

from actors.config import LLMConfig
from memory_actor.config import MemoryConfig
from npu_pool.config import HarnessConfig
from npu_pool.tasks.spec import load_task
from tests.actors.openai_server import OpenAITestServer

REPOSITORY = Path(__file__).resolve().parents[2]
RELU = REPOSITORY / "suites" / "cpu" / "level1" / "4_ReLU.py"
SIGMOID = REPOSITORY / "suites" / "cpu" / "level1" / "7_Sigmoid.py"


@pytest.fixture
def llm_server():
    with OpenAITestServer() as server:
        yield server


@pytest.fixture(scope="session")
def relu_task():
    return load_task(RELU)


@pytest.fixture(scope="session")
def sigmoid_task():
    return load_task(SIGMOID)


@pytest.fixture(scope="session")
def harness_config(tmp_path_factory) -> HarnessConfig:
    """The real CPU harness, with short timing loops (tests check behaviour, not speed)."""
    return HarnessConfig(backend="cpu", compile_baseline=False, correctness_trials=2, warmup_trials=1,
                         timed_trials=5, profile_input_sets=1,
                         build_cache_dir=str(tmp_path_factory.mktemp("build-cache")))


@pytest.fixture
def memory_config(tmp_path) -> MemoryConfig:
    """A bank whose values follow the plain rule Q <- Q + alpha (r - Q) from 0 (no priors, no
    baseline), so the tests can replay it by hand over the attempts' provenance."""
    return MemoryConfig(uri=str(tmp_path / "bank"), baseline=False, q_init_seeded=0.0, q_init_trace_feasible=0.0,
                        q_init_trace_failed=0.0, q_init_experience=0.0)


def llm_config(server: OpenAITestServer, **overrides) -> LLMConfig:
    values = dict(base_url=server.base_url, model=server.model, timeout_s=5.0, max_retries=2,
                  backoff_base_s=0.01, backoff_max_s=0.05, candidate_format="kernel")
    values.update(overrides)
    return LLMConfig(**values)
