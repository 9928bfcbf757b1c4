"""Finding or starting a bank's memory actor on the cluster, and opening it for one campaign
(the actor itself is memory_actor.actor.MemoryActor)."""

from __future__ import annotations

import time
from typing import Any

import ray
import structlog
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from memory_actor.actor import MemoryActor
from memory_actor.config import MemoryConfig, memory_actor_name
from memory_actor.disk.lease import BankInUse, BankUnusable, in_use_message, is_local, local_path

log = structlog.get_logger("evokernel.memory.actor")


def get_or_create_memory_actor(config: MemoryConfig, owner: str | None = None, node_id: str | None = None) -> Any:
    """The bank's memory actor, created on first use, found by name afterwards (one per bank:
    memory_actor_name). `owner` (a run id) names the creator in the bank's lease. `node_id`: the
    node it must start (and restart) on; one found by name stays where it is.

    Needs `ray.init` done by the caller. The bank (and the embedding model) load inside the
    actor's process, never in the caller's.
    """
    if not ray.is_initialized():
        raise RuntimeError("ray is not initialised: call ray.init(...) before get_or_create_memory_actor")
    options: dict[str, Any] = {
        "name": memory_actor_name(config),
        "get_if_exists": True,
        "max_restarts": config.actor_max_restarts,
        "max_task_retries": config.actor_max_task_retries,
        "max_concurrency": config.actor_max_concurrency,
        "num_cpus": config.actor_num_cpus,
    }
    if config.actor_blas_threads:
        # Recall is a memory-bound matrix-vector product: on a small, busy machine one BLAS thread
        # has the steadiest latency (a second thread mostly waits for the first).
        threads = str(config.actor_blas_threads)
        options["runtime_env"] = {"env_vars": {"OPENBLAS_NUM_THREADS": threads, "MKL_NUM_THREADS": threads}}
    if node_id is not None:
        # Hard affinity: a worker's loss must not take the bank's writer with it (on a cluster
        # Ray put it on a worker three times in four when it asked for no node).
        options["scheduling_strategy"] = NodeAffinitySchedulingStrategy(node_id, soft=False)
    if config.actor_namespace is not None:
        options["namespace"] = config.actor_namespace
    if config.actor_detached:
        options["lifetime"] = "detached"
    return ray.remote(MemoryActor).options(**options).remote(config.model_dump(), owner)


class MemoryActorFailed(Exception):
    """The memory actor did not start (one line; the reason is in the log)."""


def open_memory_actor(config: MemoryConfig, owner: str, timeout_s: float = 300.0) -> Any:
    """The bank's memory actor, started (or found) and serving CONFIG's bank for OWNER, whose
    handle the caller keeps for its campaign. Raises, in one line: BankInUse when another process
    writes the bank (the actor lost the race for the lease: it is ended) or when the actor found
    under that name was started by another campaign (named in the lease record); BankUnusable when
    the actor of that name serves another bank (a `memory.actor_name` set by hand) or the bank
    cannot be written; MemoryActorFailed when it does not start. One found dying (a campaign of
    this process that just ended) is replaced once. A new actor starts on the caller's node (the
    campaign's driver: the head of a cluster), never on a worker that may go away."""
    name = memory_actor_name(config)
    here = ray.get_runtime_context().get_node_id() if ray.is_initialized() else None
    for last in (False, True):
        actor = get_or_create_memory_actor(config, owner, node_id=here)
        try:
            serving = ray.get(actor.serving.remote(), timeout=timeout_s)
            break
        except Exception as exc:  # noqa: BLE001 - it did not start: the reason in one line
            log.warning("memory actor did not answer", actor=name, error=str(exc)[-2000:])
            if last:
                lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
                raise MemoryActorFailed(f"the memory actor did not start: {lines[-1] if lines else type(exc).__name__}"
                                        ) from None
            time.sleep(1.0)
    bank = local_path(config.uri) if is_local(config.uri) else config.uri
    if serving["refusal"] is not None:
        ray.kill(actor, no_restart=True)
        kind, reason = serving["refusal"]
        raise (BankInUse if kind == "BankInUse" else BankUnusable)(reason)
    if serving["uri"] != config.uri:
        raise BankUnusable(f"the cluster's memory actor {name!r} serves the bank {serving['uri']}, not {config.uri}: "
                           "leave memory.actor_name unset (one actor per bank), or use that bank")
    if serving["holder"].get("owner") != owner:
        # Another campaign on this cluster writes the bank through this actor: the actor ends
        # with that campaign's driver, so it cannot serve this one (docs/memory.md).
        raise BankInUse(in_use_message(bank, serving["holder"]))
    return actor
