"""The episode's evaluator: the harness's gates, then the profiler for feasible candidates.

A thin layer over npu_pool (which sandboxes every candidate): in-process for single-process
runs and tests, or as a Ray actor that takes one CPU slot per evaluation in flight.
"""

from __future__ import annotations

import ray
from pydantic import BaseModel

from npu_pool.config import HarnessConfig
from npu_pool.tasks import TaskSpec
from npu_pool.verdict import Candidate, ProfileReport, Verdict
from npu_pool.verifier import evaluate


class Evaluation(BaseModel):
    """A verdict and, for feasible candidates, their profile."""

    verdict: Verdict
    profile: ProfileReport | None = None

    @property
    def flags(self) -> list[str]:
        """Reasons for an LLM review, from the gates and the profiler, without repeats."""
        found = list(self.verdict.flags) + (list(self.profile.flags) if self.profile else [])
        return list(dict.fromkeys(found))


class Evaluator:
    """npu_pool's gates and profiler, in one sandboxed worker per candidate."""

    def __init__(self, config: HarnessConfig):
        self.config = config

    def evaluate(self, task: TaskSpec, candidate: Candidate) -> Evaluation:
        verdict, report = evaluate(task, candidate, self.config, profile=True)
        return Evaluation(verdict=verdict, profile=report if verdict.feasible else None)


@ray.remote(num_cpus=1)
class EvaluatorActor:
    """The evaluator as a Ray actor (one CPU slot: compiling and timing use the cores)."""

    def __init__(self, config: HarnessConfig):
        self._evaluator = Evaluator(config)

    def evaluate(self, task: TaskSpec, candidate: Candidate) -> Evaluation:
        return self._evaluator.evaluate(task, candidate)
