"""What a run holds besides its candidates, and the setting that makes it fit (issue 63, point 2).

The figures are launch.host_capacity's measured ones; the host's limit is an argument here (the
real cgroup that stands for the machine is tests/npu_pool/sandbox/test_host_memory.py's). The
issue's case: a 6 GiB container, where harness.memory_limit_mb=3072 (the old advice) still lost 3
of 4 attempts and `--max-in-flight 1` worked."""

from __future__ import annotations

from dataclasses import replace

import pytest

from launch.config import Settings
from launch.host_capacity import (
    SMALLEST_CANDIDATE_MB,
    RunShape,
    fits,
    remedy,
    remedy_flags,
    shape_of,
)


def _apply(shape: RunShape, flags: str) -> RunShape:
    """SHAPE with the remedy's flags applied, as a resume with them would run."""
    words = flags.split()
    if "--no-ray" in words:
        shape = replace(shape, ray=False)
    if "--max-in-flight" in words:
        shape = replace(shape, in_flight=int(words[words.index("--max-in-flight") + 1]))
    if "--devices" in words:
        shape = replace(shape, slots=int(words[words.index("--devices") + 1]))
    memory = next(w for w in words if w.startswith("harness.memory_limit_mb="))
    return replace(shape, memory_mb=int(memory.split("=")[1]))


def test_the_old_advice_for_6_gib_does_not_fit_and_the_new_one_does():
    shape = RunShape(ray=True, slots=2, in_flight=8, local_llm=False, memory_mb=8192)
    assert not fits(replace(shape, memory_mb=3072), 6144)  # what issue 55's warning suggested
    flags = remedy_flags(shape, 6144)
    assert flags is not None and "--max-in-flight 1" in flags, flags
    fixed = _apply(shape, flags)
    assert fits(fixed, 6144) and fixed.memory_mb >= SMALLEST_CANDIDATE_MB


@pytest.mark.parametrize("limit", [4096, 6144, 8192, 12288, 24576, 65536])
@pytest.mark.parametrize("local_llm", [False, True])
def test_every_remedy_fits_and_a_machine_that_fits_gets_none_needed(limit, local_llm):
    for ray in (True, False):
        shape = RunShape(ray=ray, slots=4, in_flight=8, local_llm=local_llm, memory_mb=8192)
        flags = remedy_flags(shape, limit)
        if fits(shape, limit):
            continue
        if flags is None:
            assert remedy(shape, limit).startswith("this machine is too small for a run: it needs about")
        else:
            assert fits(_apply(shape, flags), limit), (shape, limit, flags)
            assert remedy(shape, limit) == f"to fit, run with {flags}"


def test_the_shape_of_a_run_comes_from_its_settings_or_its_summary():
    settings = Settings.model_validate({"llm": {"base_url": "http://example.invalid/v1"},
                                        "ray": {"max_in_flight": 3, "devices": 2},
                                        "harness": {"memory_limit_mb": 4096}})
    shape = shape_of(settings, no_ray=False)
    assert shape == RunShape(ray=True, slots=2, in_flight=3, local_llm=False, memory_mb=4096)
    assert shape_of(settings.redacted(), no_ray=True) == replace(shape, ray=False)
    assert shape.at_once == 2 and replace(shape, ray=False).at_once == 1
    assert shape_of(Settings(), no_ray=True).local_llm  # no endpoint: the local model's server is part of it
