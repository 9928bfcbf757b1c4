"""The memory's mechanism in a world fitted to the last benchmark's logs, with no model.

A stand-in LLM (tests/launch/fitted_agent.py) on the loopback OpenAI server answers drafts
with the success rates that runs/learning/arms/*/attempts.jsonl measured for what the
worked-example slot showed: the generic example's base rate per family, nothing with another
family's kernel, a same-family kernel worse than the generic example on a first draft and
better on a retry, 1.6% recovery after a failure with the generic example, and near-repeats
of failed attempts. On a small curriculum (nine elementwise operators of one signature shape,
then Softmax: the same shape, another family) the real single-process campaign runs in the
three retrieval modes with the real verifier, real g++ builds and real banks seeded with the
CPU bundle, as bench/learning.py runs its arms. Every arm has the same operators, iterations,
memory.seed and stand-in seed (the stand-in's draws depend on task and draft number only), so
the arms differ by what their memory put in the slot.

In that world similarity shows the nearest kernel of the family in every draft that has one,
which the logs say hurts first drafts; value learns per draft context which candidate does
better. This checks the plumbing (the slot's candidates, its statistics, their credit, the
near-repeat gate); it says nothing about a real model and is never reported as the learning
result (docs/memory.md, docs/learning_benchmark.md).
"""

from __future__ import annotations

import asyncio
import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from launch.campaign import Campaign, default_suite
from launch.config import load_settings
from launch.logging import configure_logging
from tests.actors.openai_server import OpenAITestServer
from tests.launch.fitted_agent import FittedAgent

# Curriculum: the family's operators in suite order, then another family of the same shape.
TASKS = ["4_ReLU", "6_SiLU", "7_Sigmoid", "8_Tanh", "10_HardSwish", "45_ReLU6", "47_Softsign", "48_HardSigmoid",
         "50_SELU", "18_Softmax"]
ITERATIONS = 5
SEED = 0
MODES = ("none", "similarity", "value")

# Three campaigns of ten operators with real builds: about 6 minutes each on two busy cores.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(2400)]


def settings_for(mode: str, server: OpenAITestServer, tmp_path: Path):
    return load_settings(None, {
        "llm": {"base_url": server.base_url, "model": server.model, "candidate_format": "kernel", "timeout_s": 30,
                "max_retries": 1, "backoff_base_s": 0.05, "backoff_max_s": 0.1, "exemplar_as_example": True},
        "memory": {"uri": str(tmp_path / "banks" / mode), "retrieval": mode, "seed": SEED,
                   "preload_embedder": False},
        "episode": {"iterations": ITERATIONS, "review_flagged": False, "lessons": False},
        "harness": {"backend": "cpu", "compile_baseline": False, "timed_trials": 3, "warmup_trials": 0,
                    "correctness_trials": 1, "profile_input_sets": 1,
                    "build_cache_dir": str(tmp_path / "build")},  # shared: arms that write the same code build once
    })


def seeded_bank(tmp_path: Path, settings) -> Path:
    """The CPU bundle in a fresh bank, copied for each arm (what bench/learning.py does)."""
    from memory_actor.bank import MemoryBank
    from memory_actor.seeding import seed_items

    template = tmp_path / "banks" / "seeded"
    if not template.exists():
        bank = MemoryBank(settings.memory.model_copy(update={"uri": str(template)}))
        try:
            bank.add(seed_items("cpu", set()))
        finally:
            bank.close()
    return template


@dataclass
class Arm:
    summary: dict
    agent: FittedAgent
    bank: Path
    run_dir: Path

    def attempts(self) -> list[dict]:
        return [json.loads(line) for line in (self.run_dir / "attempts.jsonl").read_text().splitlines()]


def run_arm(mode: str, tmp_path: Path) -> Arm:
    suite = default_suite() / "level1"
    with OpenAITestServer() as server:
        agent = FittedAgent(seed=SEED)
        server.responder = agent
        settings = settings_for(mode, server, tmp_path)
        shutil.copytree(seeded_bank(tmp_path, settings), tmp_path / "banks" / mode)
        run_dir = tmp_path / "runs" / mode
        campaign = Campaign(settings, run_dir, run_id=f"mechanism-{mode}")
        summary = asyncio.run(campaign.run([suite / f"{task}.py" for task in TASKS]))
    return Arm(summary, agent, tmp_path / "banks" / mode, run_dir)


def area(summary: dict) -> int:
    """The area under fast_0(t), t = 1..T: operators solved, weighted by how early."""
    return sum(ITERATIONS + 1 - op["first_feasible_iteration"] for op in summary["operators"]
               if op["first_feasible_iteration"] is not None)


@pytest.fixture(scope="module")
def arms(tmp_path_factory) -> dict[str, Arm]:
    """The three campaigns, run once for the tests below."""
    configure_logging(False, "warning")  # one line per attempt would be ~150 lines of noise
    tmp_path = tmp_path_factory.mktemp("mechanism")
    results = {mode: run_arm(mode, tmp_path) for mode in MODES}
    for mode, arm in results.items():
        assert arm.summary["finished_at"] and arm.summary["error"] is None, mode
        assert [op["task"] for op in arm.summary["operators"]] == TASKS
    table = {mode: {op["task"]: op["first_feasible_iteration"] for op in arm.summary["operators"]}
             for mode, arm in results.items()}
    print(json.dumps(table, indent=1))  # shown when a test fails: which operator, which draft
    return results


def figures(arms) -> tuple[dict[str, int], dict[str, int]]:
    return ({mode: area(arm.summary) for mode, arm in arms.items()},
            {mode: arm.summary["totals"]["feasible"] for mode, arm in arms.items()})


def test_the_slot_shows_only_the_generic_example_or_kernels_of_the_family(arms):
    """none: always the generic example. similarity and value: a kernel of the family reaches
    the slot, and Softmax (the same signature shape, another family) never gets one; the
    elementwise template reaches ReLU's first draft in similarity (no kernel of its family yet)."""
    assert all(d.slot == "generic" and not d.template for d in arms["none"].agent.log)
    for mode in ("similarity", "value"):
        log = arms[mode].agent.log
        assert any(d.slot == "same" for d in log), mode
        assert not any(d.slot == "other" for d in log), mode
        assert all(d.slot == "generic" for d in log if d.task == "18_Softmax"), mode
    assert arms["similarity"].agent.log[0].template  # ReLU's first draft


def test_slot_statistics_are_in_the_bank_and_count_every_draft(arms):
    """The value arm's bank holds the slot's outcomes after the run (persisted, reopened), one
    count per draft the stand-in answered (a near-repeat asked again counts once, as its draft)."""
    from memory_actor.bank import MemoryBank
    from memory_actor.config import MemoryConfig

    arm = arms["value"]
    bank = MemoryBank(MemoryConfig(uri=str(arm.bank), preload_embedder=False), read_only=True)
    slots = bank.stats(disk=False).slots
    drafts = sum(n for key, (_, n) in slots.items() if key.endswith("/all"))
    assert drafts == sum(1 for a in arm.attempts() if a["stage"] == "draft" and a["reward"] is not None)
    assert {key.split("/")[2] for key in slots} == {"fresh", "retry"}
    assert "cpu/softmax_norm/fresh/all" in slots


def test_near_repeats_are_caught_before_verification(arms):
    """The stand-in rewords failed attempts as the logs' model did (21% of retries). Each reworded
    answer is caught by its fingerprint: the worker asks again (its next request for the task
    carries the "repeated" turn) or, out of retries, the episode records a repeat; none is
    verified again. (How many there are is up to the shared draws, which may give none; the
    gate itself is tested in tests/actors/test_episode.py::test_a_near_repeat_is_a_repeat.)"""
    for mode, arm in arms.items():
        log = arm.agent.log
        reworded = sum(d.outcome == "repeat" for d in log)
        caught = sum(d.reask for d in log) + sum(a["gate"] == "repeat" for a in arm.attempts())
        assert caught == reworded, (mode, reworded, caught)


def test_value_retrieval_beats_similarity(arms):
    """Similarity shows the nearest kernel of the family in every draft that has one: worse on
    first drafts, in this world as in the logs. Value learns from the slot's outcomes to keep the
    generic example for first drafts (and what helps on retries), so it solves more operators
    earlier."""
    areas, feasible = figures(arms)
    assert areas["value"] > areas["similarity"], (areas, feasible)
    assert feasible["value"] >= feasible["similarity"], (areas, feasible)
