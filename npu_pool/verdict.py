"""The messages the harness hands back: Candidate in, Verdict and ProfileReport out.

These cross package and actor boundaries (docs/contracts.md); change field names only
together with that page and tests/npu_pool/test_verdict_schema.py. Their text fields carry
what a candidate's process said: `scrubbed()` bounds it and redacts secrets
(npu_pool.redaction); the harness returns only scrubbed verdicts, and the agent scrubs
again with what its own process knows (the LLM API key) before using one.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from npu_pool.redaction import own_diagnostics, scrub

REASON_CHARS = 500
DETAILS_CHARS = 4000

CandidateFormat = Literal["modelnew", "kernel"]
# `infra`: the harness or the machine failed (device unavailable, driver or runtime
# initialisation, a missing toolchain, a harness bug), not the candidate: never a reward.
Gate = Literal["hack", "compile", "correctness", "runtime", "ok", "infra"]
Bound = Literal["memory", "compute", "unknown"]

_MODELNEW_CLASS = re.compile(r"^\s*class\s+ModelNew\b", re.MULTILINE)


class Candidate(BaseModel):
    """One kernel to judge: a KernelBench `ModelNew` file or a kernel-source function."""

    model_config = ConfigDict(extra="forbid")

    source: str
    format: CandidateFormat


def detect_format(source: str) -> CandidateFormat:
    """`modelnew` when the source defines `class ModelNew`, else `kernel` (a C/C++ entry)."""
    return "modelnew" if _MODELNEW_CLASS.search(source) else "kernel"


class Verdict(BaseModel):
    """The outcome of the gates: anti-hack, compile, correctness (and runtime failures)."""

    model_config = ConfigDict(extra="forbid")

    feasible: bool
    gate: Gate = Field(description="the gate that failed, or ok")
    category: str = Field(description="machine-readable failure kind, e.g. compile_error, mismatch, timeout")
    reason: str = Field(description="one line")
    details: str = Field("", description="what the LLM can act on: compiler errors, mismatch statistics, shapes")
    sizes: dict[str, int] = Field(default_factory=dict, description="task size constants used")
    flags: list[str] = Field(default_factory=list, description="reasons for review: static warnings, excessive_speedup")
    sandbox: dict[str, Any] = Field(default_factory=dict, description="which limits were applied")
    timings: dict[str, float] = Field(default_factory=dict, description="seconds spent per stage")

    def scrubbed(self, own_prefixes: tuple[str, ...] = ()) -> Verdict:
        """A copy whose text is bounded and free of known secrets; a compile verdict keeps
        only the compiler's lines about the candidate's own source (files under `own_prefixes` too)."""
        details = own_diagnostics(self.details, own_prefixes) if self.gate == "compile" else self.details
        return self.model_copy(update={"reason": scrub(self.reason, REASON_CHARS),
                                       "details": scrub(details, DETAILS_CHARS),
                                       "flags": [scrub(f, 200) for f in self.flags]})


class StageProfile(BaseModel):
    """Where the Ascend C twin's modelled cost of one launch goes (docs/ascendc_twin.md, "The
    modelled cost"): each stage's time summed over the blocks, in microseconds, and how the work
    was spread. Modelled from counted work, never measured."""

    model_config = ConfigDict(extra="forbid")

    modelled_us: float
    copy_in_us: float = 0.0
    vector_us: float = 0.0
    copy_out_us: float = 0.0
    scalar_us: float = 0.0
    cube_us: float = 0.0
    blocks: int = 0
    vector_cores: int = 0
    double_buffered_blocks: int = 0
    gm_scalar_accesses: int = 0
    scalar_ops: int = 0
    scalar_math_calls: int = 0  # expf, sqrtf, ... the kernel called on the scalar unit
    vector_instructions: int = 0

    @classmethod
    def from_twin(cls, profile: dict[str, Any]) -> StageProfile | None:
        """From the twin's profile JSON of a launch (NpuTwinBackend.last_profile); None without one."""
        if not profile or "modelled_us" not in profile:
            return None
        times = profile.get("time_us", {})
        return cls(modelled_us=float(profile["modelled_us"]), copy_in_us=float(times.get("copy_in", 0.0)),
                   vector_us=float(times.get("vector", 0.0)), copy_out_us=float(times.get("copy_out", 0.0)),
                   scalar_us=float(times.get("scalar", 0.0)), cube_us=float(times.get("cube", 0.0)),
                   blocks=int(profile.get("blocks", 0)), vector_cores=int(profile.get("vector_cores", 0)),
                   double_buffered_blocks=int(profile.get("double_buffered_blocks", 0)),
                   gm_scalar_accesses=int(profile.get("gm_scalar_accesses", 0)),
                   scalar_ops=int(profile.get("scalar_ops", 0)),
                   scalar_math_calls=sum(int(n) for n in profile.get("scalar_math_calls", {}).values()),
                   vector_instructions=int(profile.get("vector_instructions", 0)))

    def times(self) -> dict[str, float]:
        """Stage -> microseconds summed over the blocks: scalar, copy (in and out), vector, cube."""
        return {"scalar": self.scalar_us, "copy": self.copy_in_us + self.copy_out_us, "vector": self.vector_us,
                "cube": self.cube_us}

    def dominant(self) -> str:
        """The stage that takes the most modelled time."""
        times = self.times()
        return max(times, key=lambda stage: times[stage])


class ProfileReport(BaseModel):
    """Latency of a feasible candidate, its baselines and a roofline hint."""

    model_config = ConfigDict(extra="forbid")

    median_ms: float
    iqr_ms: float
    trials: int
    baseline_eager_ms: float
    baseline_compile_ms: float | None = None
    baseline_compile_error: str | None = Field(None, description="why torch.compile gave no baseline")
    speedup_vs_eager: float
    speedup_vs_compile: float | None = None
    achieved_gbps: float | None = None
    achieved_gflops: float | None = None
    bound: Bound = "unknown"
    hints: list[str] = Field(default_factory=list)
    flags: list[str] = Field(default_factory=list)
    sizes: dict[str, int] = Field(default_factory=dict)
    timing: Literal["measured", "modelled"] = Field(
        "measured", description="modelled: the Ascend C twin's cost from counted work, not a time measured on a device")
    stages: StageProfile | None = Field(None, description="the Ascend C twin's modelled profile of the candidate's "
                                        "launch: time per stage, cores used, double buffering (modelled timing only)")

    def scrubbed(self) -> ProfileReport:
        """A copy whose text (the baseline's error, hints) is bounded and free of known secrets."""
        error = scrub(self.baseline_compile_error, REASON_CHARS) if self.baseline_compile_error else None
        return self.model_copy(update={"baseline_compile_error": error, "hints": [scrub(h, 300) for h in self.hints],
                                       "flags": [scrub(f, 200) for f in self.flags]})


class Evaluation(BaseModel):
    """What evaluating one candidate gives back, in-process or from a device pool: the verdict,
    the profile of a feasible candidate, and where it ran (empty in-process)."""

    model_config = ConfigDict(extra="forbid")

    verdict: Verdict
    profile: ProfileReport | None = None
    device: str = Field("", description="the device that judged it, e.g. npu:3 (pools only)")
    node_id: str = Field("", description="the Ray node it ran on (pools only)")
    retried: bool = Field(False, description="a device actor died during it and another device judged it")

    def scrubbed(self) -> Evaluation:
        """A copy with the verdict's and the profile's text scrubbed (see Verdict.scrubbed)."""
        return self.model_copy(update={"verdict": self.verdict.scrubbed(),
                                       "profile": self.profile.scrubbed() if self.profile else None})

    @property
    def flags(self) -> list[str]:
        """Reasons for an LLM review, from the gates and the profiler, without repeats."""
        found = list(self.verdict.flags) + (list(self.profile.flags) if self.profile else [])
        return list(dict.fromkeys(found))
