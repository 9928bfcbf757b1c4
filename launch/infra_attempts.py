"""An operator whose attempts the machine stopped is not judged (issue 63, point 2).

An attempt with gate `infra` (the machine's own memory limit killed the candidate, a device or
toolchain failed, the harness itself failed) was not judged: the episode stores no trace, lesson
or reward for it and goes on. But the operator then had fewer tries than its budget, so it did
not run to its end either: both campaigns mark it `stopped_by: infra` with one line saying how
many attempts the machine stopped and why, `evokernel run` exits 1 with the resume command, and
the resume redoes the operator (its attempts set aside, its value updates and items taken back).
"""

from __future__ import annotations

from typing import Any

from actors.messages import Attempt, EpisodeResult

HOST_MEMORY = "the machine's memory limit stopped"  # how such an operator's error begins
MACHINE = "the machine stopped"  # ... and one stopped by another infrastructure fault
_JUDGED = ("iterations", "tokens", "wall_time")


def with_unjudged_attempts(result: EpisodeResult, attempts: list[Attempt]) -> EpisodeResult:
    """RESULT, marked not judged (`stopped_by: infra`) when any of ATTEMPTS was stopped by the
    machine; an operator already stopped otherwise (interrupted, an error) keeps how it stopped."""
    from actors.episode_factory import INFRA

    infra = [a for a in attempts if a.gate == "infra"]
    if not infra or result.stopped_by not in _JUDGED:
        return result
    host = [a for a in infra if a.category == "host_out_of_memory"]
    if host:
        cause = host[-1].reason.split(": not the candidate's fault")[0]
        error = f"{HOST_MEMORY} {len(host)} of {len(attempts)} attempt(s): {cause}"
    else:
        error = f"{MACHINE} {len(infra)} of {len(attempts)} attempt(s): {infra[-1].category}: {infra[-1].reason}"
    return result.model_copy(update={"stopped_by": INFRA, "error": error[:500]})


def host_memory_advice(summary: Any) -> tuple[str, str]:
    """The closing line's advice and the resume's extra flags (launch.host_capacity.end_advice)."""
    from launch.host_capacity import end_advice

    return end_advice(summary.settings, summary.mode)
