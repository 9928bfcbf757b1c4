"""Who runs where: every Ray role of a campaign in one table (verl's role-to-worker map, ours).

Each row says what a role runs (class or remote function), how many a campaign starts, what it
asks of Ray and the name the dashboard shows. The concurrent campaign starts its drafters,
refiners, episodes and run recorder from their rows; the verifier and profiler rows go to
`npu_pool.pools.DevicePools`, which gives each half of a device's placement bundle and starts
the pool actor with them; the memory actor comes from its own factory, because episodes find it
by name too. docs/scale_out.md prints this table; tests/launch/ray_campaign/test_roles.py
keeps the two in step and checks the live actors of a campaign against it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import ray

from actors.drafter import DrafterActor
from actors.refiner import RefinerActor
from launch.ray_campaign.campaign_services import run_episode
from launch.ray_campaign.run_recorder import RunRecorder
from npu_pool.pools import DeviceActor, DevicePoolActor, Profiler, Verifier


class Role(StrEnum):
    VERIFIER = "verifier"
    PROFILER = "profiler"
    DEVICE_POOL = "device pool"
    MEMORY = "memory"
    DRAFTER = "drafter"
    REFINER = "refiner"
    EPISODE = "episode"
    RUN_RECORDER = "run recorder"


@dataclass(frozen=True)
class RoleSpec:
    runs: Any  # the class (an actor) or remote function (a task) it runs, or that class's dotted name
    count: str  # how many one campaign starts
    resources: str  # what each asks of Ray, in words (`options` holds the fixed part)
    name: str  # name template: the actor's name and dashboard repr, or the task's name
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def qualified_name(self) -> str:
        if isinstance(self.runs, str):
            return self.runs
        target = getattr(self.runs, "_function", None) or getattr(self.runs, "__ray_actor_class__", None) or self.runs
        return f"{target.__module__}.{target.__qualname__}"

    def ray_options(self, placement: dict[str, Any] | None = None, /, **name_fields: Any) -> dict[str, Any]:
        """The Ray options of one instance: its name, the row's options, and `placement` (what only
        the caller knows, such as the node)."""
        return {"name": self.name.format(**name_fields), **self.options, **(placement or {})}

    def remote(self, placement: dict[str, Any] | None = None, /, **name_fields: Any) -> Any:
        """The role's actor class or task with those options, ready for `.remote(...)`."""
        runs = self.runs if hasattr(self.runs, "options") else ray.remote(self.runs)
        return runs.options(**self.ray_options(placement, **name_fields))


ROLES: dict[Role, RoleSpec] = {
    Role.VERIFIER: RoleSpec(
        Verifier, "one per device", "half of the device's placement bundle (NPU 0.5, num_gpus 0.5, or half "
        "the CPU slot's cores)", "verifier/{device}"),
    Role.PROFILER: RoleSpec(Profiler, "one per device", "the other half of the same bundle", "profiler/{device}"),
    Role.DEVICE_POOL: RoleSpec(DevicePoolActor, "one, started by DevicePools with the device actors", "none",
                               "pool/evaluator"),
    # Named, not imported: memory_actor.actor_handle.get_or_create_memory_actor makes it (episodes find it
    # by name too), and importing it here would load LanceDB into the driver.
    Role.MEMORY: RoleSpec("memory_actor.actor.MemoryActor", "one per bank, found by name",
                          "memory.actor_num_cpus", "{actor_name}"),
    # LLM workers hold no state a request needs: one lost with its node restarts elsewhere and
    # its requests are sent again, instead of failing every operator that used it.
    Role.DRAFTER: RoleSpec(DrafterActor, "ceil(ray.max_in_flight / llm.max_concurrency)", "none",
                           "drafter/{run_id}/{index}", {"num_cpus": 0, "max_restarts": -1, "max_task_retries": 2}),
    Role.REFINER: RoleSpec(RefinerActor, "as many as drafters", "none", "refiner/{run_id}/{index}",
                           {"num_cpus": 0, "max_restarts": -1, "max_task_retries": 2}),
    Role.EPISODE: RoleSpec(run_episode, "one task per operator, at most ray.max_in_flight at once, never retried",
                           "none, spread over the nodes", "episode/{task}",
                           {"num_cpus": 0, "max_retries": 0, "scheduling_strategy": "SPREAD"}),
    Role.RUN_RECORDER: RoleSpec(RunRecorder, "one, pinned to the driver's node", "none", "run/{run_id}",
                                {"num_cpus": 0, "max_restarts": -1, "max_task_retries": -1}),
}


def device_roles() -> dict[str, type[DeviceActor]]:
    """The classes the device pools start on every device slot, by role name."""
    return {role.value: ROLES[role].runs for role in (Role.VERIFIER, Role.PROFILER)}


def markdown_table() -> str:
    """The table as docs/scale_out.md prints it (a test keeps the two equal)."""
    rows = ["| Role | Runs | How many | Resources | Name |", "| --- | --- | --- | --- | --- |"]
    rows += [f"| {role.value} | `{spec.qualified_name}` | {spec.count} | {spec.resources} | `{spec.name}` |"
             for role, spec in ROLES.items()]
    return "\n".join(rows)
