"""Shared fixtures: one local Ray cluster and one MiniLM embedder per test session."""

from __future__ import annotations

import numpy as np
import pytest
import ray
import structlog

from memory_actor.config import MemoryConfig
from memory_actor.embeddings import MINILM_DIM, MiniLMEmbedder


@pytest.fixture(autouse=True)
def _fresh_structlog():
    """`evokernel` commands bind structlog to the sys.stderr of the moment (pytest's capture,
    closed after that test); reset it so later log lines do not write to a closed file."""
    structlog.reset_defaults()
    yield
    structlog.reset_defaults()


@pytest.fixture(scope="session")
def ray_cluster():
    """A real local Ray cluster for the session (joined if a test already started one)."""
    started = not ray.is_initialized()
    if started:
        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False, namespace="evokernel-tests")
    yield ray
    if started:
        ray.shutdown()


@pytest.fixture(scope="session")
def minilm():
    """The packaged all-MiniLM-L6-v2, loaded once for the session."""
    embedder = MiniLMEmbedder()
    embedder.embed(["warm up"])
    return embedder


@pytest.fixture
def memory_config(tmp_path):
    """A config for a fresh bank in tmp_path; exploration off unless a test turns it on."""

    def make(**overrides) -> MemoryConfig:
        values = {"uri": str(tmp_path / "bank"), "epsilon": 0.0, "actor_name": f"memory-test-{tmp_path.name}",
                  "preload_embedder": False}
        values.update(overrides)
        return MemoryConfig(**values)

    return make


def unit_vectors(count: int, seed: int = 0) -> np.ndarray:
    vectors = np.random.default_rng(seed).standard_normal((count, MINILM_DIM)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def near(vector: np.ndarray, similarity: float, seed: int = 1) -> np.ndarray:
    """A unit vector whose cosine similarity with the unit `vector` is exactly `similarity`."""
    noise = np.random.default_rng(seed).standard_normal(vector.shape).astype(np.float64)
    noise -= noise.dot(vector) * vector
    noise /= np.linalg.norm(noise)
    return (similarity * vector + np.sqrt(1 - similarity**2) * noise).astype(np.float32)
