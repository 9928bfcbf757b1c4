"""The episode's evaluator in this process: the harness's gates, then the profiler for
feasible candidates, in one sandboxed worker per candidate (npu_pool.verifier.evaluate). Under
Ray the device pools (npu_pool.pools: Verifier and Profiler actors) play this part.
"""

from __future__ import annotations

from npu_pool.config import HarnessConfig
from npu_pool.tasks.spec import TaskSpec
from npu_pool.verdict import Candidate, Evaluation
from npu_pool.verifier import evaluate


class Evaluator:
    """npu_pool's gates and profiler, in one sandboxed worker per candidate."""

    def __init__(self, config: HarnessConfig):
        self.config = config

    def evaluate(self, task: TaskSpec, candidate: Candidate) -> Evaluation:
        verdict, report = evaluate(task, candidate, self.config, profile=True)
        return Evaluation(verdict=verdict, profile=report if verdict.feasible else None)
