"""The refiner: writes a faster variant of a feasible start point, guided by its profile."""

from __future__ import annotations

import ray

from actors.messages import Proposal, RefineRequest
from actors.worker import LLMWorker, WorkerActorBase


class Refiner(LLMWorker):
    async def propose(self, request: RefineRequest) -> Proposal:
        fmt = request.task.candidate_format
        return await self._generate(self.prompts(fmt).refine(request), fmt, request.avoid,
                                    ("refine", request.task.task_id, request.draw))


@ray.remote(num_cpus=0)
class RefinerActor(WorkerActorBase):
    """Refiner as a Ray actor; LLM calls are I/O, so it takes no CPU slot."""

    worker_class = Refiner
