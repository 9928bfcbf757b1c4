"""The memory actor's Ray fixtures, shared with tests/memory_actor/ (the memory benchmark runs on them)."""

from tests.memory_actor.conftest import memory_config, ray_cluster  # noqa: F401
