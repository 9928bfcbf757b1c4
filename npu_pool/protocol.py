"""What the parent and the sandboxed worker exchange (JSON files in the sandbox folder)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from npu_pool.config import HarnessConfig
from npu_pool.tasks.spec import TaskSpec
from npu_pool.verdict import Candidate, ProfileReport


class WorkerLimits(BaseModel):
    model_config = ConfigDict(extra="forbid")

    memory_mb: int
    cpu_s: int
    processes: int = 1024  # tasks (threads included) of the whole tree, and RLIMIT_NPROC


class WorkerRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    task: TaskSpec
    candidate: Candidate
    backend: str
    config: HarnessConfig
    profile: bool
    cache_dir: str
    limits: WorkerLimits
    timing_slot: bool = False  # wait for the parent's `go` before timing (it takes the node)


class WorkerOutcome(BaseModel):
    model_config = ConfigDict(extra="forbid")

    feasible: bool
    gate: str
    category: str
    reason: str
    details: str = ""
    flags: list[str] = Field(default_factory=list)


class WorkerResult(BaseModel):
    """Written after the gates, and again after profiling; the last one written wins."""

    model_config = ConfigDict(extra="forbid")

    nonce: str
    outcome: WorkerOutcome
    profile: ProfileReport | None = None
    profile_error: str | None = None
    timings: dict[str, float] = Field(default_factory=dict)
    builds: list[dict[str, Any]] = Field(default_factory=list)
    network_isolated: bool | None = None
    complete: bool = False
    cache_updates: dict[str, dict[str, Any]] = Field(default_factory=dict)  # harness caches for the parent
    confinement: dict[str, Any] = Field(default_factory=dict)  # what the runner applied
