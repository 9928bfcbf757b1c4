"""The pilot before v6 (issue 64, point 7; bench/learning/pilot_v6.py): fresh drafts of operators
outside every pool in three arms on the twin: the bare brief, the first rung of the task's shape,
and the operator's own C kernel (a C draft first, counted as an attempt). A scripted model on a
loopback OpenAI-compatible server that writes a correct kernel only from what it is shown, real
cpu and twin builds and gates, real seeded banks."""

from __future__ import annotations

import json
import shutil

import pytest

from bench.learning import pilot, pilot_v6
from bench.learning.plan import FAMILIES, WIDE_ADDITIONS
from bench.learning.summary import family_of
from npu_pool.paths import cache_root
from tests.actors.openai_server import OpenAITestServer, Reply, ScriptedAgent
from tests.bench.learning.test_ladder import FAST

C_KERNEL = """#include <cmath>
#include <cstdint>
extern "C" void kernel(const float* x, float* out, double scale, int64_t x_d0, int64_t x_d1, int64_t out_d0,
                       int64_t out_d1) {
    for (int64_t i = 0; i < out_d0 * out_d1; ++i) out[i] = (float)(scale * x[i] / (1.0 + std::fabs((double)x[i])));
}"""
TWIN_KERNEL = """using namespace AscendC;
extern "C" __global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR out, GM_ADDR workspace, GM_ADDR tiling)
{
    KernelTiling t;
    CopyTiling(&t, tiling);
    const int64_t total = t.out_d0 * t.out_d1;
    GlobalTensor<float> xGm, outGm;
    xGm.SetGlobalBuffer((__gm__ float*)x, total);
    outGm.SetGlobalBuffer((__gm__ float*)out, total);
    if (GetBlockIdx() != 0) return;  // one block: simple and correct
    for (int64_t i = 0; i < total; ++i) {
        const float v = xGm.GetValue(i);
        outGm.SetValue(i, t.scale * v / (1.0f + (v < 0.0f ? -v : v)));
    }
}"""


class FromWhatItIsShown:
    """Writes the C kernel when a C prompt shows the C rung, the Ascend C kernel only when a twin
    prompt shows its own C kernel; anything else it writes does not compile."""

    def __init__(self):
        self.kinds = ScriptedAgent([])
        self.drafts: list[str] = []

    def __call__(self, body) -> Reply:
        if self.kinds.kind_of(body) != "draft":
            return Reply("fine")
        prompt = "\n".join(m["content"] for m in body["messages"])
        self.drafts.append(prompt)
        if "Ascend C" not in prompt and "std::tanh(v / scale)" in prompt:  # the C rung, renamed (bound -> scale)
            return Reply(f"```cpp\n{C_KERNEL}\n```")
        if "Ascend C" in prompt and "(1.0 + std::fabs((double)x[i]))" in prompt:  # its own C kernel, pinned
            return Reply(f"```cpp\n{TWIN_KERNEL}\n```")
        return Reply("```cpp\nextern \"C\" void kernel() { undeclared_name(); }\n```")


@pytest.mark.parametrize("backend", ["cpu", "npu-twin"])
def test_the_v6_pilot_operators_lie_outside_every_pool_and_a_new_rung_maps_onto_each(backend):
    tasks = pilot_v6.pilot_v6_tasks(backend)
    pool = {stem for families in (FAMILIES, WIDE_ADDITIONS) for stems in families.values() for stem in stems}
    assert len(tasks) == 6 and not {p.stem for p in tasks} & pool
    assert sorted(family_of(p) for p in tasks) == sorted(
        ["elementwise", "elementwise", "row_reduction", "row_reduction", "scan", "matmul"])


@pytest.mark.slow  # four drafts through two backends' builds: 2-7 minutes on the shared 2-core machine
def test_the_own_c_arm_drafts_in_c_first_and_shows_that_kernel_to_the_ascend_c_draft(tmp_path, monkeypatch, capsys):
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    shutil.copy(pilot_v6.PILOT_TASKS_V6 / "q1_ScaledSoftsign.py", tasks / "q1_ScaledSoftsign.py")
    monkeypatch.setattr(pilot_v6, "PILOT_TASKS_V6", tasks)
    out = tmp_path / "pilot"
    with OpenAITestServer() as server:
        agent = FromWhatItIsShown()
        server.responder = agent
        argv = ["--design", "v6", "--backend", "npu-twin", "--out", str(out), "--drafts", "1", *FAST,
                "--set", f"harness.build_cache_dir={cache_root() / 'test-build'}",
                "--llm-base-url", server.base_url, "--llm-model", server.model]
        assert pilot.main(argv) == 0
    line = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    # bare and the rung fail (the model writes nothing right from them); its own C kernel carries it
    assert (line["pass1_none"], line["pass1_rung"], line["pass1_own_c"], line["complete"]) == (0.0, 0.0, 1.0, True)
    assert line["own_c_feasible_per_attempt"] == 0.5  # one C draft and one Ascend C draft for one kernel
    summary = json.loads((out / "summary.json").read_text())
    assert summary["own_c"]["c_drafts"] == 1 and summary["own_c"]["c_feasible"] == 1
    assert summary["distinct_feasible_kernels"]["own_c"] == {"q1_ScaledSoftsign": 1}
    [c_draft] = [json.loads(x) for x in (out / "arms" / "c-draft-d0" / "attempts.jsonl").read_text().splitlines()]
    assert c_draft["feasible"] and c_draft["gate"] == "ok"
    [own] = [json.loads(x) for x in (out / "arms" / "eval-own_c-d0" / "attempts.jsonl").read_text().splitlines()]
    assert [s["role"] for s in own["shown"] if s["kind"] == "trace"] == ["pinned"]
    assert json.loads((out / "banks" / "own-c-d0.done").read_text()) == ["q1_ScaledSoftsign"]
    assert "own_c vs rung" in (out / "summary.md").read_text()
