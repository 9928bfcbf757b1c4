"""`evokernel run --backend npu-twin` end to end: a scripted LLM on loopback answers a wrong, then a
correct Ascend C kernel for 4_ReLU; the twin builds and checks both in the sandbox, the npu
bundle seeds the bank, memory learns, the run folder and its report say the timing is modelled."""

from __future__ import annotations

import json
from pathlib import Path

from launch.cli import main
from memory_actor.bank import MemoryBank
from memory_actor.config import MemoryConfig
from memory_actor.seeding import bundle_items
from npu_pool.paths import cache_root
from tests.actors.openai_server import OpenAITestServer, ScriptedAgent

KERNELS = Path(__file__).resolve().parents[1] / "npu_pool" / "candidates" / "npu_twin"
FAST_HARNESS = ["--set", "harness.compile_baseline=false", "--set", "harness.timed_trials=3",
                "--set", "harness.warmup_trials=1", "--set", "harness.correctness_trials=2",
                "--set", "harness.profile_input_sets=1", "--set", "harness.fit_max_bytes=262144",
                "--set", "llm.candidate_format=kernel", "--set", "llm.prompt_char_budget=8000",
                # the npu_pool tests' persistent build cache: these kernels are built there already
                "--set", f"harness.build_cache_dir={cache_root() / 'test-build'}"]


def reply(name: str) -> str:
    return f"Here is the kernel.\n```cpp\n{(KERNELS / name).read_text()}```\n"


def test_run_on_the_twin_verifies_learns_and_reports_modelled_timing(tmp_path, capsys):
    with OpenAITestServer() as server:
        server.responder = ScriptedAgent([reply("relu_wrong.cpp"), reply("relu_good.cpp")])
        code = main([*FAST_HARNESS, "run", "--no-ray", "--tasks", "4_ReLU*", "--backend", "npu-twin",
                     "--iterations", "2", "--llm-base-url", server.base_url, "--llm-model", server.model,
                     "--memory", str(tmp_path / "bank"), "--out", str(tmp_path / "run")])
        requests = [r["body"] for r in server.chat_requests]
    out, err = capsys.readouterr()
    assert code == 0, err[-3000:]

    # the drafts were asked in Ascend C: its system prompt, worked example and core API items
    first = requests[0]["messages"]
    assert first[0]["content"].startswith("You write ONE Ascend C kernel") and "npu-twin" in first[0]["content"]
    assert "OpenMP" not in first[0]["content"] and "GlobalTensor<float>" in first[0]["content"]
    # what the memory's first decision chose is what the prompt shows (docs/memory.md): the family's
    # idiomatic example, its first rung (as the worked example, or pinned where the budget has no
    # room for the pair), or nothing beyond the brief
    decisions = [json.loads(line) for line in err.splitlines()
                 if line.startswith("{") and '"memory_decision"' in line]
    option, shown = decisions[0]["option"].split("+")[0], "\n".join(m["content"] for m in first[1:])
    example, rung = "DataCopyPad(outGm[off], c, copy);" in shown, "first rung, elementwise family" in shown
    assert (example, rung) == {"example": (True, False), "rung": (False, True), "bare": (False, False)}[option], option
    assert 'extern "C" __global__ __aicore__ void kernel(' in first[-1]["content"]
    assert sum(len(m["content"]) for m in first) <= 8000

    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    [operator] = summary["operators"]
    assert operator["feasible"] and operator["first_feasible_iteration"] == 2 and operator["best_latency_ms"] > 0
    attempts = [json.loads(line) for line in (tmp_path / "run" / "attempts.jsonl").read_text().splitlines()]
    assert [(a["iteration"], a["gate"]) for a in attempts] == [(1, "correctness"), (2, "ok")]
    seeded = len(bundle_items("npu-twin"))  # the bundle's examples, rungs and API items
    assert f"seeded {seeded} npu-twin bundle items" in err
    assert "ms modelled" in out and "1/1 operators feasible" in out

    # memory learnt: the feasible kernel is a trace of the npu-twin backend, next to the bundle
    bank = MemoryBank(MemoryConfig(uri=str(tmp_path / "bank"), preload_embedder=False), read_only=True)
    traces = [item for item in bank.items.values() if item.kind == "trace"]
    assert traces and {item.backend for item in traces} == {"npu-twin"}
    assert any("Relu(yLocal" in item.content for item in traces)

    kernel_files = list((tmp_path / "run" / "kernels").rglob("*.cpp"))
    assert kernel_files and "Relu(yLocal" in kernel_files[0].read_text()
    html = (tmp_path / "run" / "report" / "report.html").read_text()
    assert "best latency (modelled ms)" in html and "timing: modelled" in html
