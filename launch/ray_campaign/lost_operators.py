"""Operators lost with a node: told apart from an operator's own failure, run again on the nodes
that remain (a bounded number of times), else reported as infrastructure with the resume command.

An episode task dies with its node or its worker process (a link cut, a killed raylet, the
memory monitor), or ends on an actor that went with its node (an LLM worker, the device pool:
Ray's ActorUnavailableError or ActorDiedError). None of that is the operator's verdict,
so the concurrent campaign runs the operator again from its start, as `--resume` would; the
attempts the lost try recorded stay in attempts.jsonl, and their traces and value updates in the
bank (the bank learned from exactly the attempts in the run folder). `RunSummary.lost_tries`
keeps what each lost try met. An operator lost more often than allowed ends as `stopped_by: infra`,
its error starting with LOST, and `evokernel run` exits 1 naming it with the resume command.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import ray.exceptions

from actors.messages import EpisodeResult

LOST = "lost with its node"  # how the error of an operator lost once too often begins
LOST_RETRIES = 1  # how often one operator is run again after a loss

# What Ray raises when the process or node that ran something is gone (a RayTaskError whose
# cause is one of these is an instance of it too). OutOfMemoryError: the memory monitor killed it.
_LOSSES = (ray.exceptions.NodeDiedError, ray.exceptions.WorkerCrashedError, ray.exceptions.RayActorError,
           ray.exceptions.ObjectLostError, ray.exceptions.LocalRayletDiedError, ray.exceptions.OutOfMemoryError)


def lost_with_its_node(exc: BaseException) -> bool:
    """Whether EXC says the episode's process, node or an actor it used went away (not that the
    episode itself failed)."""
    return isinstance(exc, _LOSSES)


def _names(classes: tuple[type, ...]) -> set[str]:
    found = set()
    for cls in classes:
        found |= {cls.__name__} | _names(tuple(cls.__subclasses__()))
    return found


_LOSS_NAMES = tuple(sorted(f"{name}:" for name in _names(_LOSSES) if "(" not in name))


def ended_by_a_loss(result: EpisodeResult) -> bool:
    """Whether an episode that returned ended on a lost actor (an LLM worker, the device pool on
    the node that went): Episode turns any exception into `stopped_by: error` with the
    exception's one line, `Type: message` (actors.errors.error_line)."""
    return result.stopped_by == "error" and (result.error or "").startswith(_LOSS_NAMES)


class LostOperators:
    """The campaign's record of lost tries and its retry budget."""

    def __init__(self, retries: int = LOST_RETRIES, lost_tries: dict[str, list[str]] | None = None):
        self.retries = retries
        self.tries: dict[str, list[str]] = {task: list(lines) for task, lines in (lost_tries or {}).items()}
        self._this_run: Counter[str] = Counter()  # a resumed run has its own budget
        self.waiting: list[Path] = []  # lost, to run again once the cluster can serve them

    def release(self, ready: bool) -> list[Path]:
        """The operators waiting to run again, when READY (every LLM worker answers), and none waits
        any longer; else []."""
        released, self.waiting = (self.waiting, []) if ready else ([], self.waiting)
        return released

    def run_again(self, task: str, line: str) -> bool:
        """Record TASK's lost try (LINE: what was lost); whether it may run again."""
        self.tries.setdefault(task, []).append(line)
        self._this_run[task] += 1
        return self._this_run[task] <= self.retries

    @staticmethod
    def is_lost(error: str | None) -> bool:
        """Whether an operator's error says it was lost once too often."""
        return bool(error) and error.startswith(LOST)
