"""A learning pass that banks what the model can copy (issue 54, point 4): with
`episode.start_from_rung` a curriculum operator's first draft shows its family's first rung
whatever the values say, the model's copy of it is banked as a kernel of the operator's own family
and shape, and the draft's verdict counts for the `rung` option. v4's rules hold: no kernel crosses
families or signature shapes, no failure record of another operator is shown.

A scripted model on a loopback OpenAI-compatible server that can only copy: shown a rung of the
task's family it changes the computation (a correct kernel), otherwise it writes nothing that
compiles; its refinements break the kernel (failures whose records must stay with their operator).
Real cpu and npu-twin builds and gates (through the persistent test build cache), a real LanceDB
bank, no Ray."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from actors.signature_shape import signature_shape
from bench.learning.evaluation import draft_settings
from bench.learning.learning_pass import LearningBenchmark
from bench.learning.plan import ARMS, parse_args
from bench.learning.resume import build_settings
from memory_actor.seeding import example_items, rung_items
from npu_pool.paths import cache_root
from tests.actors.openai_server import OpenAITestServer, Reply, ScriptedAgent

SUITE = Path(__file__).resolve().parents[3] / "suites" / "cpu" / "level1"
FAST = ["--set", "harness.compile_baseline=false", "--set", "harness.timed_trials=5",
        "--set", "harness.warmup_trials=1", "--set", "harness.correctness_trials=2",
        "--set", "harness.profile_input_sets=1", "--set", "llm.candidate_format=kernel",
        "--set", "episode.review_flagged=false"]
RUNGS = rung_items("cpu")
# How the copying model changes each family's rung into the operator of the prompt: (the task's
# reference marker, the rung's lines it rewrites).
COPIES = {
    "torch.relu(x)": ("elementwise", [("std::log(1.0f + std::fabs(v))", "v > 0.0f ? v : 0.0f")]),
    "torch.softmax(x, dim=1)": ("softmax_norm", [  # the row's minimum becomes its maximum, exp(low - x) exp(x - low)
        ("if (x[r * cols + c] < low)", "if (x[r * cols + c] > low)"),
        ("std::exp(low - x[r * cols + c])", "std::exp(x[r * cols + c] - low)")]),
}
BROKEN = "int relu_broken_marker = ;"  # what a refinement adds: a compile error naming its operator


def _prompt(body) -> str:
    return "\n".join(m["content"] for m in body["messages"])


class CopyingAgent:
    """Copies a rung of the task's family when the prompt shows one; nothing it writes alone compiles."""

    def __init__(self, rungs=RUNGS, copies=COPIES):
        self.rungs, self.copies = rungs, copies
        self.kinds = ScriptedAgent([])
        self.prompts: list[tuple[str, str, str]] = []  # (kind, operator marker, whole prompt)
        self.lock = threading.Lock()

    def __call__(self, body) -> Reply:
        kind = self.kinds.kind_of(body)
        if kind == "lesson":
            return Reply("Write every output element.")
        if kind == "review":
            return Reply("VERDICT: LEGITIMATE\nfine")
        prompt = _prompt(body)
        task = body["messages"][-1]["content"]
        marker = next(m for m in self.copies if m in task)
        with self.lock:
            self.prompts.append((kind, marker, prompt))
        family, edits = self.copies[marker]
        rung = self.rungs[family].content
        if kind == "refine":  # a "faster" variant that does not compile
            return Reply(f"```cpp\n{BROKEN}\n{rung}\n```")
        if rung not in prompt:
            return Reply("```cpp\nextern \"C\" void kernel() { undeclared_name(); }\n```")  # fails in either format
        for old, new in edits:
            assert old in rung
            rung = rung.replace(old, new)
        return Reply(f"```cpp\n{rung}\n```")


@pytest.fixture
def settings(tmp_path):
    def make(*extra: str, base_url: str, model: str):
        # the persistent test build cache: the copies are the same sources every run, compiled once
        return build_settings(parse_args([*FAST, "--set", f"harness.build_cache_dir={cache_root() / 'test-build'}", *extra,
                                          "--llm-base-url", base_url, "--llm-model", model]))
    return make


def _attempts(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "attempts.jsonl").read_text().splitlines()]


def test_a_learning_pass_started_from_the_rungs_banks_same_family_same_shape_kernels(tmp_path, settings):
    from memory_actor.bank import MemoryBank

    tasks = [SUITE / "4_ReLU.py", SUITE / "18_Softmax.py"]
    with OpenAITestServer() as server:
        agent = CopyingAgent()
        server.responder = agent
        run = settings("--set", "episode.start_from_rung=true", base_url=server.base_url, model=server.model)
        bench = LearningBenchmark(run, tmp_path / "results")
        assert bench.run_arm("learn-value", ARMS["value"], tasks, iterations=2, seed=0)

    attempts = _attempts(bench.arm_dir("learn-value"))
    assert [(a["task"], a["stage"], a["feasible"]) for a in attempts] == [
        ("4_ReLU", "draft", True), ("4_ReLU", "refine", False),
        ("18_Softmax", "draft", True), ("18_Softmax", "refine", False)]
    first = {a["task"]: {s["id"] for s in a["shown"]} for a in attempts if a["stage"] == "draft"}
    assert RUNGS["elementwise"].id in first["4_ReLU"] and RUNGS["softmax_norm"].id in first["18_Softmax"]
    examples = {item.id for item in example_items("cpu").values()}
    assert not (first["4_ReLU"] | first["18_Softmax"]) & examples  # the rung alone, not the idiomatic example
    assert RUNGS["elementwise"].id not in first["18_Softmax"]

    # No kernel crosses families, and no failure record of another operator is shown: Softmax's
    # prompts hold neither ReLU's kernel, nor the elementwise rung, nor ReLU's failed refinement.
    relu_kernel = RUNGS["elementwise"].content.replace("std::log(1.0f + std::fabs(v))", "v > 0.0f ? v : 0.0f")
    softmax_prompts = [p for kind, marker, p in agent.prompts if marker == "torch.softmax(x, dim=1)"]
    assert len(softmax_prompts) == 2
    for prompt in softmax_prompts:
        assert "relu_broken_marker" not in prompt and relu_kernel not in prompt
        assert RUNGS["elementwise"].content not in prompt

    bank = MemoryBank(run.memory.model_copy(update={"uri": str(bench.banks / "learn-value")}), read_only=True)
    try:
        feasible = {item.task_id: item.tag_values() for item in bank.items.values()
                    if item.kind == "trace" and item.verdict is not None and item.verdict.gate == "ok"}
        counts = bank.slots.state()
    finally:
        bank.close()
    # the bank ends the pass with kernels of each operator's own family and shape
    from npu_pool.backends import get_backend
    from npu_pool.tasks.spec import load_task

    for task, family in (("4_ReLU", "elementwise"), ("18_Softmax", "softmax_norm")):
        spec = load_task(SUITE / f"{task}.py", max_bytes=4 * 2**20)
        shape = signature_shape(get_backend("cpu").render_kernel_signature(spec.kernel_signature))
        assert feasible[task] == {"family": family, "shape": shape}
        # each success is evidence for the option that produced it
        assert counts[f"cpu/{family}/fresh/rung"] == [1, 1]
        assert f"cpu/{family}/fresh/bare" not in counts


def test_without_the_setting_a_first_draft_is_the_decisions_and_frozen_drafts_never_start_from_a_rung(
        tmp_path, settings):
    task = [SUITE / "4_ReLU.py"]
    with OpenAITestServer() as server:
        agent = CopyingAgent()
        server.responder = agent
        # no cold rates: neither screening's nor the shipped ones (a benchmark measures its own,
        # bench/learning/screening.py)
        plain = settings("--set", "episode.lessons=false", "--set", "memory.shipped_rates=false",
                         base_url=server.base_url, model=server.model)
        bench = LearningBenchmark(plain, tmp_path / "results")
        assert bench.run_arm("learn-value", ARMS["value"], task, iterations=1, seed=0)
    # a fresh bank without cold rates measures the family's cold rate first: bare, no rung
    [attempt] = _attempts(bench.arm_dir("learn-value"))
    assert not attempt["feasible"] and RUNGS["elementwise"].id not in {s["id"] for s in attempt["shown"]}
    started = settings("--set", "episode.start_from_rung=true", base_url="http://127.0.0.1:9", model="m")
    assert started.episode.start_from_rung
    assert not draft_settings(started, ARMS["value"], tmp_path / "bank", 0).episode.start_from_rung


# slow (about a minute here: a twin attempt at the task's sizes and the awkward ones, then its
# profile); by default the C copy above covers the pass, and tests/memory_actor/test_family_rungs.py
# runs every twin rung through the twin's gates
@pytest.mark.slow
def test_on_the_twin_a_copy_of_the_scalar_rung_is_banked_as_an_ascend_c_kernel(tmp_path, settings):
    """The same in Ascend C on the npu-twin, where v4's learning passes banked nothing: the copy
    of the elementwise rung (scalar GlobalTensor loops over each block's share) passes the twin's
    gates at the task's sizes and the awkward ones, and counts for the rung."""
    from memory_actor.bank import MemoryBank

    twin_rungs = rung_items("npu-twin")
    copies = {"torch.relu(x)": ("elementwise", [("logf(1.0f + a)", "v > 0.0f ? v : 0.0f")])}
    with OpenAITestServer() as server:
        agent = CopyingAgent(twin_rungs, copies)
        server.responder = agent
        run = settings("--set", "episode.start_from_rung=true", "--set", "episode.lessons=false",
                       "--set", "harness.backend=npu-twin", base_url=server.base_url, model=server.model)
        bench = LearningBenchmark(run, tmp_path / "results")
        assert bench.run_arm("learn-value", ARMS["value"], [SUITE / "4_ReLU.py"], iterations=1, seed=0)
    [attempt] = _attempts(bench.arm_dir("learn-value"))
    assert attempt["feasible"], attempt["reason"]
    assert twin_rungs["elementwise"].id in {s["id"] for s in attempt["shown"]}
    bank = MemoryBank(run.memory.model_copy(update={"uri": str(bench.banks / "learn-value")}), read_only=True)
    try:
        [kernel] = [item for item in bank.items.values() if item.kind == "trace"]
        counts = bank.slots.state()
    finally:
        bank.close()
    assert kernel.task_id == "4_ReLU" and kernel.backend == "npu-twin" and kernel.verdict.gate == "ok"
    assert kernel.tag_values()["family"] == "elementwise" and "GetValue" in kernel.content
    assert counts["npu-twin/elementwise/fresh/rung"] == [1, 1]
