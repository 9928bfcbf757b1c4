"""The same episode code over Ray actors: memory actor, drafter, refiner and evaluator actors."""

from __future__ import annotations

import asyncio

import pytest
import ray

from actors.briefing import task_brief
from actors.config import EpisodeConfig
from actors.drafter import DrafterActor
from actors.episode import Episode
from actors.evaluator import Evaluator
from actors.ports import RayActor
from actors.refiner import RefinerActor
from memory_actor.actor_handle import get_or_create_memory_actor
from npu_pool.backends import get_backend
from tests.actors import replies
from tests.actors.conftest import llm_config
from tests.actors.openai_server import ScriptedAgent


@pytest.fixture
def local_ray():
    started = not ray.is_initialized()
    if started:
        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False,
                 namespace="evokernel-actors-test")
    yield
    if started:
        ray.shutdown()


def test_episode_through_ray_actors(local_ray, llm_server, relu_task, harness_config, memory_config):
    llm_server.responder = ScriptedAgent([replies.WRONG, replies.FAST])
    memory_config = memory_config.model_copy(update={"actor_name": "evokernel-memory-episode-test"})
    llm = llm_config(llm_server)
    memory = get_or_create_memory_actor(memory_config)
    episode = Episode(
        task=relu_task, brief=task_brief(relu_task, get_backend("cpu"), "kernel"), memory=RayActor(memory),
        drafter=RayActor(DrafterActor.remote(llm)), refiner=RayActor(RefinerActor.remote(llm)),
        evaluator=RayActor(ray.remote(num_cpus=1)(Evaluator).remote(harness_config)), config=EpisodeConfig(iterations=2),
        run_id="ray-test",
    )
    result = asyncio.run(episode.run())
    wrong, fast = episode.attempts
    assert (wrong.gate, wrong.reward, fast.gate, fast.reward) == ("correctness", -1.0, "ok", 1.0)
    assert result.feasible and result.first_feasible_iteration == 2 and result.error is None
    # The actor's bank holds both traces, the failure record and the fix (what changed to pass);
    # the second draft was bare (a family's first fresh drafts measure its cold rate) and its
    # slot outcome was counted through the actor.
    stats = ray.get(memory.stats.remote())
    assert stats.items_by_kind == {"trace": 2, "experience": 2}
    assert fast.retrieved_item_ids == [] and [s for s in fast.shown if s.kind != "api"] == []
    assert "lesson:fix" in ray.get(memory.get.remote(fast.lesson_id)).tags
    assert stats.slots["cpu/elementwise/retry/bare"] == [1, 1]
    assert ray.get(memory.get.remote(fast.attempt_id)).parent_id is None
