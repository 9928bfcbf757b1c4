"""The memory's mechanism, with no model: value retrieval should beat similarity and none.

A stand-in LLM (tests/launch/prompt_sensitive_agent.py) on the loopback OpenAI server writes
a correct kernel with high probability when its prompt shows a correct kernel of the same
operator family and rarely otherwise, and copies broken code it is shown when it fails. On a small
suite (two families, the easy member of each first) the real single-process campaign runs
in the three retrieval modes with the real verifier, real g++ builds and real banks seeded
with the CPU bundle, as bench/learning.py runs its arms. Every arm has the same operators,
iterations, memory.seed and stand-in seed (the stand-in's random draws depend on task and
draft number only), so the arms differ by what their memory put in the prompts.

This checks the plumbing (a feasible kernel of one operator reaches the prompt of its
sibling, failed code of other operators never does, retrieval beats none, and value ranking
is no worse than similarity; that it beats similarity is a strict xfail today, see its reason);
it says nothing about a real model and is never reported as the learning result
(docs/learning_benchmark.md).
"""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest

from launch.campaign import Campaign, default_suite
from launch.config import load_settings
from launch.logging import configure_logging
from tests.actors.openai_server import OpenAITestServer
from tests.launch.prompt_sensitive_agent import PromptSensitiveAgent

# Curriculum: each family's easy member first, so that its feasible kernel can help the others.
TASKS = ["4_ReLU", "6_SiLU", "7_Sigmoid", "18_Softmax", "20_LayerNorm", "22_BatchNormEval"]
COLD = {"4_ReLU": 0.5, "6_SiLU": 0.1, "7_Sigmoid": 0.1, "18_Softmax": 0.5, "20_LayerNorm": 0.1,
        "22_BatchNormEval": 0.1}
ITERATIONS = 5
SEED = 0
MODES = ("none", "similarity", "value")


def settings_for(mode: str, server: OpenAITestServer, tmp_path: Path):
    return load_settings(None, {
        "llm": {"base_url": server.base_url, "model": server.model, "candidate_format": "kernel", "timeout_s": 30,
                "max_retries": 1, "backoff_base_s": 0.05, "backoff_max_s": 0.1},
        "memory": {"uri": str(tmp_path / "banks" / mode), "retrieval": mode, "seed": SEED,
                   "preload_embedder": False},
        "episode": {"iterations": ITERATIONS, "review_flagged": False},
        "harness": {"backend": "cpu", "compile_baseline": False, "timed_trials": 3, "warmup_trials": 1,
                    "correctness_trials": 2, "profile_input_sets": 1,
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


def run_arm(mode: str, tmp_path: Path) -> tuple[dict, PromptSensitiveAgent]:
    suite = default_suite() / "level1"
    with OpenAITestServer() as server:
        agent = PromptSensitiveAgent(COLD, seed=SEED)
        server.responder = agent
        settings = settings_for(mode, server, tmp_path)
        shutil.copytree(seeded_bank(tmp_path, settings), tmp_path / "banks" / mode)
        campaign = Campaign(settings, tmp_path / "runs" / mode, run_id=f"mechanism-{mode}")
        summary = asyncio.run(campaign.run([suite / f"{task}.py" for task in TASKS]))
    return summary, agent


def area(summary: dict) -> int:
    """The area under fast_0(t), t = 1..T: operators solved, weighted by how early."""
    return sum(ITERATIONS + 1 - op["first_feasible_iteration"] for op in summary["operators"]
               if op["first_feasible_iteration"] is not None)


@pytest.fixture(scope="module")
def arms(tmp_path_factory) -> dict[str, tuple[dict, PromptSensitiveAgent]]:
    """The three campaigns, run once for the tests below (about a minute and a half)."""
    configure_logging(False, "warning")  # one line per attempt would be ~100 lines of noise
    tmp_path = tmp_path_factory.mktemp("mechanism")
    results = {mode: run_arm(mode, tmp_path) for mode in MODES}
    for mode, (summary, _) in results.items():
        assert summary["finished_at"] and summary["error"] is None, mode
        assert [op["task"] for op in summary["operators"]] == TASKS
    table = {mode: {op["task"]: op["first_feasible_iteration"] for op in summary["operators"]}
             for mode, (summary, _) in results.items()}
    print(json.dumps(table, indent=1))  # shown when a test fails: which operator, which draft
    return results


def figures(arms) -> tuple[dict[str, int], dict[str, int]]:
    return ({mode: area(summary) for mode, (summary, _) in arms.items()},
            {mode: summary["totals"]["feasible"] for mode, (summary, _) in arms.items()})


def test_memory_puts_a_siblings_correct_kernel_in_the_prompt_and_no_failed_code(arms):
    """Without memory no prompt shows another operator's code. With memory, a correct kernel of
    one operator reaches the draft prompt of a sibling, and no other operator's failed code
    does (the only failed code a prompt shows is the operator's own previous attempt)."""
    for shown, _ in arms["none"][1].log:
        assert set(shown.exemplar_tasks + shown.broken_tasks) <= {shown.task}
    for mode in ("similarity", "value"):
        log = arms[mode][1].log
        assert any(set(shown.exemplar_tasks) - {shown.task} for shown, _ in log), mode
        assert all(set(shown.broken_tasks) <= {shown.task} for shown, _ in log), mode


def test_retrieval_beats_no_memory(arms):
    areas, feasible = figures(arms)
    for mode in ("similarity", "value"):
        assert areas[mode] > areas["none"] and feasible[mode] > feasible["none"], (areas, feasible)


def test_value_retrieval_is_no_worse_than_similarity(arms):
    """At 1fc2e7f value lost (area 25 vs 29): credited practices filled the slots and a sibling's
    kernel reached the prompt a draft later. The kernel slot and the mixed ranker fixed that."""
    areas, feasible = figures(arms)
    assert areas["value"] >= areas["similarity"] and feasible["value"] >= feasible["similarity"], (areas, feasible)


@pytest.mark.xfail(strict=True, reason=(
    "measured at da9b0c5: area under fast_0 none 13, similarity 29, value 29, the same first feasible "
    "draft for every operator. In this simulation the embedder's nearest feasible kernel is always one "
    "of the right family (also for a decoy tried by relabelling 22_BatchNormEval elementwise: its "
    "nearest kernels were then the elementwise ones), so similarity is already the oracle and values "
    "have nothing to correct. A strict xfail: when the ranking changes, this XPASS says so."))
def test_value_retrieval_beats_similarity(arms):
    areas, feasible = figures(arms)
    assert areas["value"] > areas["similarity"], (areas, feasible)
    assert feasible["value"] >= feasible["similarity"], (areas, feasible)
