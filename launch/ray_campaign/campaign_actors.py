"""The actors one Ray campaign starts beside its device pools, from start to teardown.

The bank's memory actor (one per bank, found by name by episodes on every node), the run
recorder (on the driver's node, launch.ray_campaign.run_recorder) and the LLM workers (drafters and
refiners, launch.ray_campaign.roles), started before the first episode; at the end the memory is flushed
(its lease given back) before the campaign writes its final summary, and only then is the
rest torn down. The loop over operators that uses them is launch.ray_campaign.concurrent_campaign's.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import ray
import structlog
from pydantic import SecretStr
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from actors.errors import error_message
from launch.campaign import CampaignError
from launch.config import Settings
from launch.ray_campaign.campaign_services import EpisodeServices
from launch.ray_campaign.ray_session import gcs_reachable, shutdown_ray
from launch.ray_campaign.roles import ROLES, Role
from launch.stop_shield import wait_through_a_stop
from memory_actor.disk.bank_errors import BankWriteFailed
from npu_pool.pools import DevicePools

log = structlog.get_logger("evokernel.campaign")


class BankRefused(CampaignError):
    """The memory bank has another writer (or the cluster's memory actor serves another bank)."""


def cluster_settings(settings: Settings) -> Settings:
    """The settings the campaign's actors and episodes run with, on any node: the API key of
    this process's environment in them, and the memory actor's name."""
    from memory_actor.config import cluster_config

    llm = settings.llm
    if llm.api_key is None and os.environ.get("OPENAI_API_KEY"):
        # Workers on other nodes do not see this process's environment: hand them the key.
        llm = llm.model_copy(update={"api_key": SecretStr(os.environ["OPENAI_API_KEY"])})
        settings = settings.model_copy(update={"llm": llm})
    # The memory actor's name (one per bank) is fixed here: episodes on other nodes find it.
    return settings.model_copy(update={"memory": cluster_config(settings.memory)})


class CampaignActors:
    """The memory actor, run recorder and LLM workers of one run (`run_id`): `start` them,
    `flush` the memory at the end, then `stop` everything."""

    def __init__(self, run_id: str):
        self.run_id = run_id
        self.memory: Any = None
        self.recorder: Any = None
        self.drafters: list[Any] = []
        self.refiners: list[Any] = []
        self.ray_alive = True  # the cluster's GCS still answers (asked at the flush)

    @property
    def llm_workers(self) -> list[Any]:
        return self.drafters + self.refiners

    def start(self, settings: Settings, pools: DevicePools, run_dir: Path, planned: int) -> EpisodeServices:
        """The actors started for `settings` (cluster_settings'); the services each episode is
        shipped with."""
        llm, in_flight = settings.llm, settings.ray.max_in_flight
        # The driver holds the memory actor's handle for the whole campaign: a named actor whose
        # handles all go away is destroyed, and episodes would then each create it anew.
        self.memory = self._memory_actor(settings)
        on_this_node = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=False)
        recorder = ROLES[Role.RUN_RECORDER].remote({"scheduling_strategy": on_this_node}, run_id=self.run_id).remote(
            str(run_dir), self.run_id, planned)
        # Enough LLM workers that every episode in flight can have a request out.
        size = max(1, math.ceil(in_flight / llm.max_concurrency))
        drafters = [ROLES[Role.DRAFTER].remote(run_id=self.run_id, index=i).remote(llm) for i in range(size)]
        refiners = [ROLES[Role.REFINER].remote(run_id=self.run_id, index=i).remote(llm) for i in range(size)]
        self.recorder, self.drafters, self.refiners = recorder, drafters, refiners
        return EpisodeServices(memory_config=settings.memory, pool=pools.pool, drafter=drafters[0],
                               refiner=refiners[0], recorder=recorder)

    def _memory_actor(self, settings: Settings) -> Any:
        """The bank's memory actor, serving this run (memory_actor.actor_handle.open_memory_actor):
        a bank another process writes (the lease taken after `evokernel run` checked it, or another
        campaign on this cluster) is BankRefused (exit 2), in one line naming the holder."""
        from memory_actor.actor_handle import MemoryActorFailed, open_memory_actor
        from memory_actor.disk.lease import BankUnusable

        try:
            return open_memory_actor(settings.memory, owner=f"evokernel run {self.run_id}")
        except BankUnusable as exc:
            raise BankRefused(str(exc)) from None
        except MemoryActorFailed as exc:
            raise CampaignError(str(exc)) from None

    def flush(self, pools: DevicePools | None) -> tuple[list[dict[str, Any]] | None, str | None, bool]:
        """The devices' placement figures (None where they could not be had), the memory's flush
        failure that stops the run (a full disk, in one line) or None, and whether a stop arrived
        meanwhile (the flush still finishes, within its bound: launch.stop_shield). When the stop
        signal also reached the GCS (a process-group signal), calls that need it would block
        until Ray's core worker ends this process: the wait is short, and `stop` skips them."""
        self.ray_alive = gcs_reachable()
        if not self.ray_alive:
            log.warning("ray_lost", detail="the cluster's GCS is gone (its head killed, or a stop signal sent to "
                        "the whole process group, which reaches Ray's own processes too): its teardown is skipped")
        # Without the GCS, Ray's core worker ends this process about 60 s on: keep the wait short.
        wait_s = 30.0 if self.ray_alive else 10.0
        devices, stopped = None, False
        if self.ray_alive and pools is not None and pools.pool is not None:
            try:
                asked = pools.pool.stats.remote()
                stats, stopped = wait_through_a_stop(lambda left: ray.get(asked, timeout=left), wait_s, "device stats")
                devices = stats["members"]
            except Exception as exc:  # noqa: BLE001 - placement figures only; the summary must still be written
                log.warning("device_stats_failed", error=type(exc).__name__)
        try:
            if self.memory is not None:  # every value update durable and the bank's lease given back
                closing = self.memory.close.remote()
                _, stopped_now = wait_through_a_stop(lambda left: ray.get(closing, timeout=left), wait_s, "memory flush")
                stopped = stopped or stopped_now
        except BankWriteFailed as exc:  # said by the actor: a full disk, in one line
            log.error("memory_flush_failed", error=error_message(exc))
            return devices, error_message(exc), stopped
        except Exception as exc:  # noqa: BLE001 - the summary must still be written
            timed_out = isinstance(exc, ray.exceptions.GetTimeoutError)
            reason = f"no answer within {wait_s:.0f} s" if timed_out else error_message(exc)
            log.warning("memory_flush_failed", error=reason, detail="the memory's last value updates may not be "
                        "on disk (the bank stays readable)")
        return devices, None, stopped

    def stop(self, pools: DevicePools | None, started_ray: bool) -> None:
        """Every actor killed and the pools shut down (where the GCS still answers), and Ray
        stopped where this campaign started it."""
        if self.ray_alive:
            for handle in self.llm_workers + ([self.recorder] if self.recorder is not None else []):
                ray.kill(handle, no_restart=True)
            if pools is not None:
                pools.shutdown()
        if started_ray:
            shutdown_ray()
