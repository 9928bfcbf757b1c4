"""The memory's mechanism in a world fitted to the benchmarks' raw drafts, with no model.

Two checks. The policy (fast): the real decision (memory_actor/slots.py) and its statistics in a
world fitted to v2-v4's raw drafts and the facts of issue 54, with the benchmark's real evidence
volume (screening, then a learning pass of about 2 fresh drafts and 10 retries a family, then a
frozen evaluation of held-out operators): value must reach bare's rate (the `none` arm's) in the
families the model knows, and never fall below it anywhere. The campaigns (slow): the stand-in
on the loopback OpenAI server (tests/launch/fitted_agent.py), the real single-process campaign in
the three retrieval modes with the real verifier, real g++ builds and real banks seeded with the
CPU bundle, as bench/learning/ runs its arms: the plumbing (no kernel crosses families, ranked
items only with the decision's option, statistics count every draft, near-repeats end as
repeats). It says nothing about a real model and is never reported as the learning result
(docs/memory.md, docs/learning_benchmark.md).
"""

from __future__ import annotations

import asyncio
import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from memory_actor.config import MemoryConfig
from memory_actor.slots import SlotCandidate, SlotOutcome, SlotRequest, SlotStats, decide
from tests.launch.fitted_agent import FittedAgent

# --- the policy, in a world fitted to the benchmarks (issue 54, points 1-4) -----------------


@dataclass(frozen=True)
class Family:
    """One operator family in one language, as v2-v4's raw drafts describe it.

    pool: the screening pool's operators' fresh bare rates (v4: most of a C family's pool is never
    solved, its band solved often: row reductions 6 of 90 over the pool, 17 of 32 held out; no
    Ascend C draft was ever right bare). fresh: a fresh draft's rate by what it showed, as a
    factor of the operator's bare rate where the model knows the language (it copies what it
    sees and drops what it does not understand: the idiomatic example sank v4's C row reductions
    to 0 of 32 and matmuls to 5 of 48; a same-family kernel halved v2's LeakyReLU), as a rate
    where it does not (issue 54.3: code it can finish lifts, v3's banked kernel 11 of 19; v4's
    idiomatic examples 0 of 32, scans 4 of 32). Retries: the generic example recovered 3 of 183,
    a same-family kernel 2 of 8; ranked items on top multiply by 0.3 (v3 C: 6/88 against 36/104).
    """

    name: str
    known: bool
    pool: tuple[float, ...]
    fresh: dict[str, float]  # option (example, rung, kernels) -> factor (known) or rate (unknown)
    retry: dict[str, float] = field(default_factory=lambda: {"bare": 3 / 183, "example": 2 / 8, "rung": 2 / 8,
                                                             "kernels": 2 / 8})

    def rate(self, option: str, ranked: bool, retry: bool, bare_rate: float) -> float:
        if retry:
            rate = self.retry["bare" if option == "bare" else option]
        elif option == "bare":
            rate = bare_rate
        else:
            rate = bare_rate * self.fresh[option] if self.known else self.fresh[option]
        return rate * 0.3 if ranked else rate


UNSOLVED, BAND = (0.0,) * 6, (0.4, 0.55, 0.7, 0.85, 0.6, 0.5)
WORLD = [
    Family("C elementwise", True, UNSOLVED + BAND, {"example": 0.5, "rung": 0.5, "kernels": 0.5}),
    Family("C row reduction", True, UNSOLVED + (0.05, 0.05) + BAND[:4], {"example": 0.0, "rung": 0.5,
                                                                          "kernels": 0.5}),
    Family("C matmul", True, UNSOLVED + (0.2, 0.3, 0.25, 0.2), {"example": 0.4, "rung": 0.5, "kernels": 0.5}),
    Family("Ascend C elementwise", False, (0.0,) * 10, {"example": 0.0, "rung": 11 / 19, "kernels": 11 / 19}),
    Family("Ascend C scan", False, (0.0,) * 10, {"example": 0.125, "rung": 11 / 19, "kernels": 11 / 19}),
]
SCREENING_DRAFTS = 3  # v3/v4 stage 1: three cold drafts per pool operator
CURRICULUM = 2  # operators a family in the learning pass: ~2 fresh drafts a family
ITERATIONS = 6  # drafts an episode may take (v4: 1 fresh, then retries until feasible): ~10 retries
HELD_OUT = 4  # held-out operators a family (v4: 1 to 14)
SEEDS = 40


def _candidates(has_kernel: bool) -> list[SlotCandidate]:
    candidates = [SlotCandidate(key="generic", kind="generic"), SlotCandidate(key="example", kind="example"),
                  SlotCandidate(key="rung", kind="example", option="rung")]  # a rung declared by its bundle entry
    return candidates + ([SlotCandidate(key="kernel", kind="kernel")] if has_kernel else [])


def _option(kind: str, key: str) -> str:
    return {"generic": "bare", "kernel": "kernels"}.get(kind, key)


def policy_rates(family: Family, seed: int) -> dict[str, float]:
    """One benchmark in the fitted world: screening (three bare drafts a pool operator: the
    family's and each operator's cold records), a learning pass on two operators outside the
    band with value's Thompson sampling, then the expected pass@1 of the held-out (band)
    operators' fresh drafts (exact, by the world's rates): `none` bare, `value` greedy on the frozen bank, `similarity` the
    family's example or kernel with ranked items."""
    rng = np.random.default_rng(seed)
    screened = {f"op{i}": int(rng.binomial(SCREENING_DRAFTS, rate)) for i, rate in enumerate(family.pool)}
    band = [op for op, s in screened.items() if 0 < s < SCREENING_DRAFTS]
    if len(band) < HELD_OUT:  # v4's rule: the floor is admitted (Ascend C: nothing was ever solved)
        band = [op for op, s in screened.items() if s < SCREENING_DRAFTS]
    held_out = list(rng.choice(band, size=min(HELD_OUT, len(band)), replace=False))
    curriculum = list(rng.choice([op for op in screened if op not in held_out], size=CURRICULUM, replace=False))
    cold = {"cpu/fam": (sum(screened.values()), SCREENING_DRAFTS * len(screened))}
    cold |= {f"cpu/fam/{op}": (s, SCREENING_DRAFTS) for op, s in screened.items()}
    config = MemoryConfig(retrieval="value", cold_rates=cold, shipped_rates=False)
    stats, has_kernel = SlotStats(), False
    true_rate = dict(zip(screened, family.pool, strict=True))
    for op in curriculum:
        for iteration in range(ITERATIONS):
            context = "fresh" if iteration == 0 else "retry"
            choice = decide("value", "cpu", SlotRequest(task_id=op, family="fam", context=context),
                            _candidates(has_kernel), stats, config, rng)
            option = _option(choice.kind, choice.chosen)
            success = bool(rng.random() < family.rate(option, choice.ranked, context == "retry", true_rate[op]))
            stats.record(SlotOutcome(backend="cpu", family="fam", context=context, key=choice.chosen, kind=choice.kind,
                                     option=choice.candidates[[c.key for c in choice.candidates].index(choice.chosen)]
                                     .option, task_id=op, ranked=choice.ranked), success)
            if success:
                has_kernel = True  # a feasible kernel of the family and shape is banked
                break
    frozen = config.model_copy(update={"slot_greedy": True})
    rates: dict[str, list[float]] = {"none": [], "value": [], "similarity": []}
    for op in held_out:
        choice = decide("value", "cpu", SlotRequest(task_id=op, family="fam"), _candidates(has_kernel), stats, frozen,
                        rng)
        rates["value"].append(family.rate(_option(choice.kind, choice.chosen), choice.ranked, False, true_rate[op]))
        rates["none"].append(true_rate[op])
        rates["similarity"].append(family.rate("kernels" if has_kernel else "example", True, False, true_rate[op]))
    return {arm: float(np.mean(values)) for arm, values in rates.items() if values}


def test_value_reaches_bare_where_the_model_knows_and_never_falls_below_it():
    """With the benchmark's evidence volume, value frozen after the learning pass is at bare's rate
    in every family the model knows (a memory option nobody tried, or tried once, never displaces
    bare: v4's loss), and always showing memory (similarity) costs at least half of it there.
    Where the model does not know the language, value is above bare: a fresh success of the rung
    in the learning pass is evidence enough against a bare rate of zero. How far above depends on
    how often the two fresh learning drafts of a family meet the rung (measured about 9 points of
    the rung's 58: docs/memory.md); printed, asserted only above bare."""
    table = {}
    for family in WORLD:
        runs = [policy_rates(family, seed) for seed in range(SEEDS)]
        table[family.name] = {arm: round(float(np.mean([run[arm] for run in runs])), 3) for arm in runs[0]}
    print(json.dumps(table))
    for family in WORLD:
        rates = table[family.name]
        if family.known:
            assert rates["value"] >= rates["none"] - 0.01, (family.name, rates)  # bare's rate
            assert rates["similarity"] < 0.5 * rates["none"], (family.name, rates)  # memory always shown: harm
        else:
            assert rates["value"] > rates["none"] + 0.02, (family.name, rates)  # evidence moved it, somewhere


# --- the campaigns: the plumbing, with real builds ------------------------------------------

# A family the stand-in knows, then one it does not (Softmax and LayerNorm: the example's family).
TASKS = ["4_ReLU", "6_SiLU", "7_Sigmoid", "8_Tanh", "18_Softmax", "20_LayerNorm"]
ITERATIONS = 3
SEED = 0
MODES = ("none", "similarity", "value")


def settings_for(mode: str, server, tmp_path: Path):
    from launch.config import load_settings

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
    """The CPU bundle in a fresh bank, copied for each arm (what bench/learning/learning_pass.py does)."""
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


EARLIER = 4  # drafts per context of an earlier run in the value arm's bank: softmax/norm's example lifted them


def earlier_evidence(config: MemoryConfig) -> None:
    """What the value arm's bank knows before its campaign: an earlier run's drafts in which the
    softmax/normalisation example was right 4 of 4 times, fresh and on retries (as the world has
    it: a same-family example 11 of 19 where the model does not know the family). Without
    evidence the decision starts every option at bare's posterior and Thompson sampling shows the
    example about half the time, so whether six Softmax and LayerNorm drafts meet it would be
    chance; with it they do, and the plumbing below is checked on them."""
    from memory_actor.bank import MemoryBank
    from memory_actor.messages import ValueUpdate

    bank = MemoryBank(config)
    try:
        [example] = bank.api.lookup("cpu", ["example_softmax_norm"])
        for context in ("fresh", "retry"):
            outcome = SlotOutcome(backend="cpu", family="softmax_norm", context=context, key=example, kind="example")
            for _ in range(EARLIER):
                bank.update(ValueUpdate(shown_ids=[], stage="draft", reward=1.0, slot=outcome))
    finally:
        bank.close()


def run_arm(mode: str, tmp_path: Path) -> Arm:
    from launch.campaign import Campaign, default_suite
    from tests.actors.openai_server import OpenAITestServer

    suite = default_suite() / "level1"
    with OpenAITestServer() as server:
        agent = FittedAgent(seed=SEED)
        server.responder = agent
        settings = settings_for(mode, server, tmp_path)
        shutil.copytree(seeded_bank(tmp_path, settings), tmp_path / "banks" / mode)
        if mode == "value":
            earlier_evidence(settings.memory)
        run_dir = tmp_path / "runs" / mode
        campaign = Campaign(settings, run_dir, run_id=f"mechanism-{mode}")
        summary = asyncio.run(campaign.run([suite / f"{task}.py" for task in TASKS]))
    return Arm(summary, agent, tmp_path / "banks" / mode, run_dir)


@pytest.fixture(scope="module")
def arms(tmp_path_factory) -> dict[str, Arm]:
    """The three campaigns, run once for the tests below."""
    from launch.logging import configure_logging

    configure_logging(False, "warning")  # one line per attempt would be ~50 lines of noise
    tmp_path = tmp_path_factory.mktemp("mechanism")
    results = {mode: run_arm(mode, tmp_path) for mode in MODES}
    for mode, arm in results.items():
        assert arm.summary["finished_at"] and arm.summary["error"] is None, mode
        assert [op["task"] for op in arm.summary["operators"]] == TASKS
    table = {mode: {op["task"]: op["first_feasible_iteration"] for op in arm.summary["operators"]}
             for mode, arm in results.items()}
    print(json.dumps(table, indent=1))  # shown when a test fails: which operator, which draft
    return results


@pytest.mark.slow
@pytest.mark.timeout(2400)
def test_no_kernel_crosses_families_and_ranked_items_come_only_with_the_decision(arms):
    """none: the generic example alone. similarity and value: never another family's kernel or
    example; value shows ranked items only beside a family example or kernel; Softmax (the same
    signature shape as the elementwise kernels, another family) gets its own family's example,
    never an elementwise kernel."""
    assert all(d.slot == "generic" and not d.ranked for d in arms["none"].agent.log)
    for mode in ("similarity", "value"):
        log = arms[mode].agent.log
        assert not any(d.slot == "other" for d in log), mode
        assert any(d.slot == "same" for d in log if d.task in ("18_Softmax", "20_LayerNorm")), mode
    assert not any(d.ranked and d.slot == "generic" for d in arms["value"].agent.log)
    # similarity shows the family's nearest item of the task's signature shape: since the ladder
    # has a first rung for every shape (issue 64.2), 20_LayerNorm's (weights, eps) too, the norm
    # rung with a weight tensor (issue 54.3 still holds: what cannot be shown in the task's terms
    # is not shown; there is no such task here any more)
    assert all(d.slot == "same" and d.ranked for d in arms["similarity"].agent.log)
    assert {d.slot_task for d in arms["similarity"].agent.log if d.task == "20_LayerNorm"} == {"r28_RMSNormWithBias"}


@pytest.mark.slow
@pytest.mark.timeout(2400)
def test_decision_statistics_are_in_the_bank_and_count_every_draft(arms):
    """The value arm's bank holds the decision's outcomes after the run (persisted, reopened),
    one count per draft the stand-in answered (a near-repeat asked again counts once)."""
    from memory_actor.bank import MemoryBank

    arm = arms["value"]
    bank = MemoryBank(MemoryConfig(uri=str(arm.bank), preload_embedder=False), read_only=True)
    slots = bank.stats(disk=False).slots
    drafts = sum(n for key, (_, n) in slots.items() if key.endswith("/all")) - 2 * EARLIER  # the earlier run's
    assert drafts == sum(1 for a in arm.attempts() if a["stage"] == "draft" and a["reward"] is not None)
    assert {"cpu/softmax_norm/fresh/all", "cpu/elementwise/fresh/all"} <= set(slots)
    # each draft counts once for the option it showed (which one is the sampled decision's: bare
    # need not come up in a handful of drafts), beside the family's total, a kernel's own record
    # and a bare fresh draft's operator record
    options: dict[str, int] = {}
    for key, (_, n) in slots.items():
        prefix, _, last = key.rpartition("/")
        if last != "all" and not last.startswith("bare@") and last not in bank.items:
            options[prefix] = options.get(prefix, 0) + n
    assert options == {key.rpartition("/")[0]: n for key, (_, n) in slots.items() if key.endswith("/all")}


@pytest.mark.slow
@pytest.mark.timeout(2400)
def test_near_repeats_are_caught_before_verification(arms):
    """The stand-in rewords failed attempts as the logs' model did (21% of retries). Each reworded
    answer is caught by its fingerprint: the worker asks again (its next request for the task
    carries the "repeated" turn) or, out of retries, the episode records a repeat; none is
    verified again."""
    for mode, arm in arms.items():
        log = arm.agent.log
        reworded = sum(d.outcome == "repeat" for d in log)
        caught = sum(d.reask for d in log) + sum(a["gate"] == "repeat" for a in arm.attempts())
        assert caught == reworded, (mode, reworded, caught)
