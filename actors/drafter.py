"""The drafter: writes a complete candidate from the task, memory and the last verdict."""

from __future__ import annotations

import ray

from actors.messages import DraftRequest, Proposal
from actors.worker import LLMWorker, WorkerActorBase


class Drafter(LLMWorker):
    async def propose(self, request: DraftRequest) -> Proposal:
        fmt = request.task.candidate_format
        return await self._generate(self.prompts(fmt).draft(request), fmt, request.avoid,
                                    ("draft", request.task.task_id, request.draw))


@ray.remote(num_cpus=0)
class DrafterActor(WorkerActorBase):
    """Drafter as a Ray actor; LLM calls are I/O, so it takes no CPU slot."""

    worker_class = Drafter
