"""Whether this machine's memory holds a run, and what to set where it does not (issue 63).

The machine's own limit (npu_pool.sandbox.host_memory.host_limit_mb: a container's, a slice's, or
the RAM) must hold the run itself as well as its candidates: Ray's processes, the campaign's
actors and workers, the task loaders, the warm sandbox servers and, without an endpoint, the local
model. A limit that cannot hold them all gets good kernels killed by the host (stored as
infrastructure faults, not judged), so `evokernel run` warns at its start and names a setting
that fits; the closing line of a run that lost attempts that way gives the same advice.

What a run holds besides its candidates was measured (2026-12-06, Ray 2.60, torch 2.13 CPU, 2
cores: the PSS of every process of the run, sampled each second; docs/harness.md, "The machine's
own limit below the candidate's"): a Ray-mode run of 7 CPU-suite operators with 2 evaluation slots
and 2 operators in flight peaked at 4.4 GB, of which about 2.1 GB Ray's own processes (0.6), the
driver, the memory actor with the embedding model (0.55), the run recorder, the device pool and
the LLM workers; about 0.7 GB each evaluation slot (its verifier and profiler actors and their warm
servers, the candidates' runners included); about 0.5 GB each operator in flight (its episode
worker and its task loader). A one-process run (`--no-ray`) peaked at 1.4 GB. The figures below
round these up. The local model's server holds 2.2 to 3.8 GB (docs/local_llm.md).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from typing import Any

RAY_BASE_MB = 2400  # Ray, the driver, the memory actor, the run recorder, the device pool, the LLM workers
PER_SLOT_MB = 800  # an evaluation slot: its verifier and profiler actors and their warm servers
PER_EPISODE_MB = 550  # an operator in flight: its episode worker and its task loader
ONE_PROCESS_MB = 1700  # `--no-ray`: the whole campaign in one process, with its warm server and task loader
LOCAL_LLM_MB = 3800  # the local model's server, its prompt cache full
SMALLEST_CANDIDATE_MB = 1024  # a kernel's build and its correctness trials at the fitted sizes
CANDIDATE_PEAK_MB = 2048  # what a good candidate may reach: a torch extension build peaks near 2 GB


@dataclass(frozen=True)
class RunShape:
    """What of a run takes memory: the mode, its evaluation slots, its operators in flight,
    whether it serves the local model, and the candidates' limit."""

    ray: bool
    slots: int
    in_flight: int
    local_llm: bool
    memory_mb: int

    @property
    def candidate_mb(self) -> int:
        """What one candidate may really take: its build's peak, or its limit where that is lower
        (harness.memory_limit_mb is a bound, 8 GiB by default, not what a kernel uses)."""
        return min(self.memory_mb, CANDIDATE_PEAK_MB)

    @property
    def at_once(self) -> int:
        """Candidates evaluated at the same time."""
        return 1 if not self.ray else max(1, min(self.in_flight, self.slots))

    def overhead_mb(self) -> int:
        """What the run holds besides its candidates."""
        if self.ray:
            held = RAY_BASE_MB + PER_SLOT_MB * self.slots + PER_EPISODE_MB * self.in_flight
        else:
            held = ONE_PROCESS_MB
        return held + (LOCAL_LLM_MB if self.local_llm else 0)


def shape_of(settings: Any, no_ray: bool) -> RunShape:
    """The shape of a run with these settings (launch.config.Settings, or the `settings` dict a
    summary.json records)."""
    get = _getter(settings)
    local_llm = get("llm", "base_url") is None or (isinstance(settings, dict) and _served_locally(settings))
    devices, per_device = get("ray", "devices"), float(get("ray", "cpus_per_device") or 1.0)
    slots = devices or max(1, int((os.cpu_count() or 1) // per_device))
    in_flight = int(get("ray", "max_in_flight") or 1)
    if local_llm and not isinstance(settings, dict):
        from launch.local_llm.settings import operators_in_flight

        in_flight = operators_in_flight(settings)
    return RunShape(ray=not no_ray, slots=slots, in_flight=in_flight, local_llm=local_llm,
                    memory_mb=int(get("harness", "memory_limit_mb") or 8192))


def _served_locally(settings: dict[str, Any]) -> bool:
    """Whether a recorded run used the local model (its settings then name the local server's
    loopback address and the local model's name)."""
    from launch.local_llm.config import LocalLLMConfig

    llm = settings.get("llm") or {}
    try:
        name = LocalLLMConfig.model_validate(settings.get("local_llm") or {}).spec().name
    except Exception:  # noqa: BLE001 - an unknown model or a settings file of another version: not local
        return False
    return llm.get("model") == name and str(llm.get("base_url") or "").startswith(("http://127.0.0.1", "http://localhost"))


def _getter(settings: Any) -> Any:
    if isinstance(settings, dict):
        return lambda section, key: (settings.get(section) or {}).get(key)
    return lambda section, key: getattr(getattr(settings, section), key)


def fits(shape: RunShape, limit_mb: int) -> bool:
    """Whether LIMIT_MB holds the run and its candidates at what each may really take."""
    return limit_mb - shape.overhead_mb() >= shape.candidate_mb * shape.at_once


def remedy_flags(shape: RunShape, limit_mb: int) -> str | None:
    """The flags that make the run fit in LIMIT_MB: the candidates' limit lowered, then also one
    operator at a time, one evaluation slot, one process; None where nothing fits."""
    tries: list[tuple[RunShape, str]] = [(shape, "")]
    if shape.ray:
        one = replace(shape, in_flight=1)
        tries += [(one, "--max-in-flight 1 "), (replace(one, slots=1), "--max-in-flight 1 --devices 1 "),
                  (replace(shape, ray=False), "--no-ray ")]
    for option, flags in tries:
        per = (limit_mb - option.overhead_mb()) // option.at_once
        if per >= SMALLEST_CANDIDATE_MB:
            return f"{flags}--set harness.memory_limit_mb={min(per, shape.memory_mb)}"
    return None


def remedy(shape: RunShape, limit_mb: int) -> str:
    """REMEDY_FLAGS in words, or that the machine is too small."""
    flags = remedy_flags(shape, limit_mb)
    if flags is not None:
        return f"to fit, run with {flags}"
    one = replace(shape, in_flight=1, slots=1, ray=False)
    return (f"this machine is too small for a run: it needs about {one.overhead_mb() + SMALLEST_CANDIDATE_MB} "
            f"MiB (give it more memory{', or point the run at an endpoint with --llm-base-url' if shape.local_llm else ''})")


def held_besides(shape: RunShape) -> str:
    parts = ("Ray, the campaign's actors and workers, the task loaders" if shape.ray
             else "the campaign's process, its warm server and task loader")
    return f"{parts}{', the local model' if shape.local_llm else ''}"


def capacity_warning(shape: RunShape) -> str | None:
    """At start-up: a line when the machine's memory limit cannot hold the run and its candidates
    at harness.memory_limit_mb each, with a setting that fits; None when it can."""
    from npu_pool.sandbox.host_memory import host_limit_mb

    limit, where = host_limit_mb()
    if fits(shape, limit):
        return None
    left = max(0, limit - shape.overhead_mb())
    return (f"this machine may hold {limit} MiB ({where}); this run holds about {shape.overhead_mb()} MiB besides "
            f"its candidates ({held_besides(shape)}), leaving {left} MiB for {shape.at_once} candidate(s) at once, "
            f"each of which may take {shape.candidate_mb} MiB (harness.memory_limit_mb={shape.memory_mb}): a "
            f"candidate the host's limit kills is reported as an infrastructure fault, not judged; "
            f"{remedy(shape, limit)}")


def end_advice(settings: dict[str, Any], mode: str | None) -> tuple[str, str]:
    """For a run whose attempts the host's memory limit stopped (SETTINGS: its summary's): the
    closing line's advice, in the start warning's terms, and the flags its resume should add."""
    from npu_pool.sandbox.host_memory import host_limit_mb

    shape = shape_of(settings, no_ray=mode == "single-process")
    limit, where = host_limit_mb()
    flags = remedy_flags(shape, limit)
    said = (f"this machine holds {limit} MiB ({where}) and the run about {shape.overhead_mb()} MiB besides its "
            f"candidates ({held_besides(shape)})")
    if flags is None or fits(shape, limit):  # it fits now (the limit moved), or nothing does
        return f"{said}; {remedy(shape, limit) if flags is None else 'it fits as it is now'}", ""
    return f"{said}: {remedy(shape, limit)}", flags
