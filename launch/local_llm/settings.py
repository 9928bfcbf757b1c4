"""The run's settings against the local server: the model's own values wherever the user
did not set one (an explicit setting wins, even when it equals the default)."""

from __future__ import annotations

from typing import Any

from actors.config import LLMConfig
from launch.config import Settings
from launch.local_llm.config import machine_cores
from launch.local_llm.models import LocalModelSpec


def local_llm_config_for_agent(llm: LLMConfig, spec: LocalModelSpec, base_url: str) -> LLMConfig:
    """The agent's LLM settings for the local server: the spec's values where the user set none
    (`model_fields_set`: an explicit value wins even when it equals the default)."""
    wanted: dict[str, Any] = {
        "model": spec.name,
        "temperature": spec.temperature,
        "max_tokens": spec.max_tokens,
        "candidate_format": spec.candidate_format,
        "small_model": spec.small_model,
        "timeout_s": spec.request_timeout_s,
        "max_concurrency": spec.max_concurrency,
        "prompt_char_budget": spec.prompt_char_budget,
    }
    update = {k: v for k, v in wanted.items() if k not in llm.model_fields_set}
    if llm.prompt_style is None:  # unset (not merely equal to a default), so an explicit "full" stays
        update["prompt_style"] = spec.prompt_style
    if llm.exemplar_as_example is None:  # likewise: an explicit false stays
        update["exemplar_as_example"] = spec.exemplar_as_example
    return llm.model_copy(update={**update, "base_url": base_url})


def local_llm_settings(settings: Settings, base_url: str) -> Settings:
    """The run's settings against the local server: the agent's LLM settings and lessons from the
    model's spec, and no more operators in flight than it can serve (all only where the user set
    no value)."""
    spec = settings.local_llm.spec()
    llm = local_llm_config_for_agent(settings.llm, spec, base_url)
    if llm.seed is None:
        # the server's seed names the run's draws: the requests' own seeds follow from it (the same
        # command gives the same drafts run after run, as the server's own seed chain did)
        llm = llm.model_copy(update={"seed": settings.local_llm.seed or 0})
    update: dict[str, Any] = {"llm": llm}
    if settings.episode.lessons is None:
        update["episode"] = settings.episode.model_copy(update={"lessons": spec.lessons})
    ray = settings.ray
    if "max_in_flight" not in ray.model_fields_set:
        update["ray"] = ray.model_copy(update={"max_in_flight": operators_in_flight(settings)})
    return settings.model_copy(update=update)


# Below this many cores a second operator in flight costs more than it brings: the server
# answers one request at a time, and keeping a core for the harness beside it halves the
# model's threads on 2 cores (idle machine, bench/results/attempt-2026-11-28-idle: a C attempt
# 22 s with one operator and 2 threads, 35 s with two and 1 thread; the overlapped evaluation
# is 0.4-4 s).
MIN_CORES_FOR_OVERLAP = 4


def operators_in_flight(settings: Settings) -> int:
    """Operators a Ray campaign against the local server runs at once: the user's value, else
    no more than the model's spec says one server answers, and one on a machine too small to
    give the harness a core of its own."""
    ray = settings.ray
    if "max_in_flight" in ray.model_fields_set:
        return ray.max_in_flight
    spec_value = settings.local_llm.spec().max_in_flight
    return min(ray.max_in_flight, spec_value if machine_cores() >= MIN_CORES_FOR_OVERLAP else 1)
