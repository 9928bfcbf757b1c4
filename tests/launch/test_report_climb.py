"""The user sees the climb (issue 65, point 4): for an Ascend C operator the run keeps its first and
best kernels (kernels/<task>/first.cpp and best.cpp) with the twin's modelled profile of each in
kernels/index.json, and `evokernel report` shows the two side by side, stage by stage. The kernels
folder is written by the run's own recorder (launch.kernel_files.KernelFolder) from the attempts as
an episode records them; the report is the real command."""

from __future__ import annotations

import json
import re
from pathlib import Path

from actors.messages import Attempt
from launch.cli import main
from launch.kernel_files import KernelFolder, kernel_task
from launch.kernel_index import KernelIndex
from memory_actor import ladder
from npu_pool.tasks.spec import load_task
from npu_pool.verdict import StageProfile

EXPM1 = Path(__file__).resolve().parents[2] / "bench" / "learning" / "pilot_tasks" / "p1_Expm1.py"
# the twin's profiles of the elementwise first and vector rungs (2026-12-06, tests/memory_actor/test_speed_rungs.py)
SCALAR = StageProfile(modelled_us=4374.2, scalar_us=104857.6, blocks=24, vector_cores=48, gm_scalar_accesses=1048576)
VECTOR = StageProfile(modelled_us=5.33, copy_in_us=20.74, vector_us=14.47, copy_out_us=20.74, blocks=24,
                      vector_cores=48, vector_instructions=144)


def _code(rung: str) -> str:
    return next(r.content for r in ladder.rungs("ascendc") if r.task_id == "ex1_Log1pAbs" and r.rung == rung)


def _attempt(iteration: int, stage: str, latency_ms: float, code: str, stages: StageProfile) -> Attempt:
    return Attempt(run_id="climb", task="p1_Expm1", iteration=iteration, stage=stage, gate="ok", feasible=True,
                   latency_ms=latency_ms, speedup_vs_eager=0.0086 / latency_ms, code=code, stages=stages,
                   attempt_id=f"a{iteration}", candidate_format="kernel")


def test_the_report_shows_the_first_and_best_kernels_modelled_profiles_side_by_side(tmp_path, capsys):
    run = tmp_path / "run"
    folder = KernelFolder(run)
    folder.operator_started(kernel_task(load_task(EXPM1, max_bytes=1 << 22), "npu-twin", "kernel"))
    attempts = [_attempt(1, "draft", 4.3742, _code("first"), SCALAR),
                _attempt(2, "refine", 0.00533, _code("vector"), VECTOR)]
    for attempt in attempts:
        folder.record(attempt)
    kernels = run / "kernels" / "p1_Expm1"
    assert (kernels / "first.cpp").read_text() == _code("first") and (kernels / "best.cpp").read_text() == _code("vector")
    entries = {e.kernel: e for e in KernelIndex.load(run / "kernels").kernels}
    assert entries["first"].stages == SCALAR and entries["best"].stages == VECTOR
    # the attempt records carry the profile too (attempts.jsonl, what the report reads besides the index)
    assert json.loads(attempts[1].model_dump_json())["stages"]["vector_us"] == 14.47
    (run / "attempts.jsonl").write_text("".join(a.model_dump_json() + "\n" for a in attempts))
    (run / "summary.json").write_text(json.dumps({
        "run_id": "climb", "started_at": "2026-12-06T08:00:00+00:00", "finished_at": "2026-12-06T09:00:00+00:00",
        "settings": {"memory": {"retrieval": "value"}, "episode": {"iterations": 2}, "llm": {"model": "m"},
                     "harness": {"backend": "npu-twin"}}, "operators": [{"task": "p1_Expm1"}], "totals": {}}))
    assert main(["report", str(run), "--out", str(tmp_path / "report")]) == 0
    html = (tmp_path / "report" / "report.html").read_text()
    section = html.split("<h2 id=climb>")[1]
    rows = re.findall(r"<tr>(.*?)</tr>", section, re.DOTALL)
    cells = [re.findall(r"<td>(.*?)</td>", row) for row in rows[1:3]]
    assert [c[:3] for c in cells] == [["p1_Expm1", "first", "4374"], ["p1_Expm1", "best", "5.33"]]
    first, best = cells
    assert first[3] == "1.049e+05" and first[6] == "scalar" and first[8] == "0 of 24"
    assert best[4] == "41.48" and best[5] == "14.47" and best[6] == "copy" and best[10] == "821x"
    assert "24 on 24 of 48" in first[7] and "modelled, not measured" in section


def test_a_measured_run_has_no_climb_section(tmp_path):
    run = tmp_path / "run"
    folder = KernelFolder(run)
    folder.operator_started(kernel_task(load_task(EXPM1, max_bytes=1 << 22), "cpu", "kernel"))
    attempt = _attempt(1, "draft", 1.0, "extern \"C\" void kernel() {}", SCALAR).model_copy(update={"stages": None})
    folder.record(attempt)
    (run / "attempts.jsonl").write_text(attempt.model_dump_json() + "\n")
    assert main(["report", str(run), "--out", str(tmp_path / "report")]) == 0
    assert "id=climb" not in (tmp_path / "report" / "report.html").read_text()
