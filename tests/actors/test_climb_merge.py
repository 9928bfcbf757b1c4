"""The current kernel's formula carried into the ub_scalar rung (actors/climb_merge.py): the merged
kernel computes the task (real twin gates on the task), the rung's plumbing is untouched, a
constructor scalar the formula reads is carried over, a row reduction's accumulator lines go into
the row rung, and every form the merge cannot carry safely is refused (the rung is then shown as
before)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from actors.briefing import task_brief
from actors.climb_merge import FORMULA_LOOP, merged_rung
from actors.config import LLMConfig
from actors.messages import ClimbRung, RefineRequest, StartPoint
from actors.prompting import PromptBuilder
from actors.renaming import in_task_terms
from memory_actor import ladder
from memory_actor.seeding import speed_rungs
from npu_pool.backends import get_backend
from npu_pool.tasks.spec import load_task
from npu_pool.verdict import Candidate
from npu_pool.verifier import verify
from tests.npu_pool.harness_support import SMALL_BYTES, harness_config

REPOSITORY = Path(__file__).resolve().parents[2]
EXPM1 = REPOSITORY / "bench" / "learning" / "pilot_tasks" / "p1_Expm1.py"
ROW_MAX = REPOSITORY / "bench" / "learning" / "pilot_tasks" / "p3_RowMaxAbs.py"
# the pilot's first kernel of p1_Expm1 (the first rung copied, its formula the task's)
EXPM1_FIRST = next(r for r in ladder.rungs("ascendc") if r.task_id == "ex1_Log1pAbs" and r.rung == "first").content.replace(
    "        const float a = v < 0.0f ? -v : v;\n        outGm.SetValue(i, logf(1.0f + a));",
    "        outGm.SetValue(i, expf(v) - 1.0f);")


def _rung(name: str, task_path: Path) -> str:
    task = task_brief(load_task(task_path, max_bytes=1 << 22), get_backend("npu-twin"), "kernel")
    item = next(i for items in speed_rungs("npu-twin").values() for i in items if i.name == name)
    return in_task_terms(item, task.signature).item.content


def _outside_formula(code: str) -> list[str]:
    loop = FORMULA_LOOP.search(code)
    head, rest = code[:loop.end()], code[loop.end():]
    return head.splitlines() + rest[rest.index("\n" + loop.group("indent") + "}"):].splitlines()


def _feasible(task_path: Path, source: str) -> None:
    task = load_task(task_path, max_bytes=SMALL_BYTES)
    verdict = verify(task, Candidate(source=source, format="kernel"), harness_config(backend="npu-twin", correctness_trials=2))
    assert verdict.feasible, f"{verdict.gate}/{verdict.category}: {verdict.reason}\n{source}"


def test_an_elementwise_kernel_s_formula_goes_into_the_rung_and_computes_the_task():
    rung = _rung("ub_scalar_rung_elementwise_ex1_Log1pAbs", EXPM1)
    merged = merged_rung(rung, EXPM1_FIRST)
    assert merged is not None and "logf(1.0f + a)" not in merged
    assert "            const float v = tile.GetValue(i);\n            tile.SetValue(i, expf(v) - 1.0f);\n" in merged
    assert _outside_formula(merged) == _outside_formula(rung)  # buffers, copies, flags, tail, split: the rung's
    _feasible(EXPM1, merged)


def test_a_constructor_scalar_the_formula_reads_is_carried_over():
    r11 = REPOSITORY / "memory_actor" / "ladder" / "tasks" / "r11_SoftClip.py"
    first = next(r for r in ladder.rungs("ascendc") if r.task_id == "r11_SoftClip" and r.rung == "first").content
    start = re.sub(r"(?<!t\.)\bbound\b", "limit", first)  # the model's own name for the tiling's scalar
    rung = _rung("ub_scalar_rung_elementwise_r11_SoftClip", r11)
    merged = merged_rung(rung, start)
    assert merged is not None and "    const float limit = t.bound;" in merged
    assert "expf(2.0f * tile.GetValue(i) / limit)" in merged
    _feasible(r11, merged)


@pytest.mark.parametrize("task", ["p3_RowMaxAbs", "p4_RowRange"])
def test_a_row_reduction_s_accumulator_goes_into_the_row_rung_and_computes_the_task(task):
    """The pilot's own first kernels (bench.climb's archived ones): their accumulators' start, update
    and result lines in the row rung, the rest of it untouched."""
    from bench.climb import archived_kernel

    path = REPOSITORY / "bench" / "learning" / "pilot_tasks" / f"{task}.py"
    start = archived_kernel(task)
    rung = _rung("ub_scalar_rung_row_reduction_ex2_MeanAbsOverRows", path)
    merged = merged_rung(rung, start)
    assert merged is not None and "sum / (float)cols" not in merged and "float sum = 0.0f;" not in merged
    assert "tile.GetValue(c)" in merged and "xGm.GetValue" not in merged
    assert re.search(r"res\.SetValue\(r - r0, \w", merged)
    _feasible(path, merged)


@pytest.mark.parametrize("case", ["row result read from memory", "index in the formula", "a local hides the tile",
                                  "another tensor's element", "a name from other locals", "already tiled"])
def test_what_cannot_be_carried_safely_is_not_merged(case):
    rung = _rung("ub_scalar_rung_elementwise_ex1_Log1pAbs", EXPM1)
    start = {
        "row result read from memory": next(r for r in ladder.rungs("ascendc") if r.task_id == "ex2_MeanAbsOverRows"
                                            and r.rung == "first").content.replace(
            "outGm.SetValue(r, sum / (float)cols);", "outGm.SetValue(r, sum / xGm.GetValue(r));"),
        "index in the formula": EXPM1_FIRST.replace("expf(v) - 1.0f", "expf(v) - (float)(i % 2)"),
        "a local hides the tile": EXPM1_FIRST.replace("outGm.SetValue(i, expf(v) - 1.0f);",
                                                      "const float tile = expf(v);\n        outGm.SetValue(i, tile - 1.0f);"),
        "another tensor's element": EXPM1_FIRST.replace("expf(v)", "expf(xGm.GetValue(i + 1))"),
        "a name from other locals": EXPM1_FIRST.replace("    for (int64_t i = begin;",
                                                        "    const float shift = (float)per;\n    for (int64_t i = begin;")
                                               .replace("expf(v) - 1.0f", "expf(v) - shift"),
        "already tiled": rung,
    }[case]
    if case == "row result read from memory":
        rung = _rung("ub_scalar_rung_row_reduction_ex2_MeanAbsOverRows", ROW_MAX)
    assert merged_rung(rung, start) is None


def test_the_prompt_shows_a_merged_rung_as_the_task_s_own_kernel():
    task = task_brief(load_task(EXPM1, max_bytes=1 << 22), get_backend("npu-twin"), "kernel")
    rung = _rung("ub_scalar_rung_elementwise_ex1_Log1pAbs", EXPM1)
    merged = merged_rung(rung, EXPM1_FIRST)
    climb = ClimbRung(item_id="r", rung="ub_scalar", task_id="ex1_Log1pAbs", reference=ladder.task_source("ex1_Log1pAbs")[1],
                      code=merged, formula="", merged=True)
    request = RefineRequest(task=task, start=StartPoint(id="s", code=EXPM1_FIRST, latency_ms=4.76), best_latency_ms=4.76,
                            climb=climb)
    config = LLMConfig(prompt_char_budget=16000, prompt_style="plain", small_model=True, candidate_format="kernel")
    user = PromptBuilder(config, "kernel").refine(request).messages[-1]["content"]
    assert "## The next rung up: tiles through UB" in user and "This task's kernel in that form" in user
    assert "tile.SetValue(i, expf(v) - 1.0f);" in user
    assert "torch.log1p" not in user  # the rung's own task is not shown: its formula is not the one to write
