"""The current kernel's elementwise formula lowered into the vector rung by the system
(actors/climb_vectorize.py): the kernel it writes computes the task on the twin (real gates and
profile) with vector instructions, the rung's plumbing untouched; what it cannot lower, or what
would not fit in UB, is refused (the rung is then shown to the model as before)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from actors.briefing import task_brief
from actors.climb import rung_of
from actors.climb_merge import merged_rung
from actors.climb_vectorize import vectorized_rung
from actors.climb_vectorize_rows import vectorized_rows
from actors.renaming import in_task_terms
from bench.climb import archived_kernel
from memory_actor import ladder
from memory_actor.seeding import speed_rungs
from npu_pool.backends import get_backend
from npu_pool.tasks.spec import load_task
from npu_pool.verdict import Candidate
from npu_pool.verifier import evaluate
from tests.npu_pool.harness_support import SMALL_BYTES, harness_config

REPOSITORY = Path(__file__).resolve().parents[2]
PILOT = REPOSITORY / "bench" / "learning" / "pilot_tasks"
INSTRUCTION = re.compile(r"^\s*(Abs|Adds|Muls|Ln|Exp|Add|Sub|Mul|Div|Max|Min|Maxs|Mins|Sqrt|Reciprocal|LeakyRelu)\(",
                         re.MULTILINE)


def _form(task: str, rung: str) -> str:
    return next(r for r in ladder.rungs("ascendc") if r.task_id == task and r.rung == rung).content


def _profiled(task_path: Path, source: str, tmp: Path):
    task = load_task(task_path, max_bytes=SMALL_BYTES)
    verdict, profile = evaluate(task, Candidate(source=source, format="kernel"),
                                harness_config(backend="npu-twin", correctness_trials=2, build_cache_dir=str(tmp)))
    assert verdict.feasible, f"{verdict.gate}/{verdict.category}: {verdict.reason}\n{source}"
    return profile


def _without_formula(code: str) -> list[str]:
    return [line for line in code.splitlines() if not INSTRUCTION.match(line) and "scratch" not in line]


@pytest.mark.parametrize("task, rung", [("ex1_Log1pAbs", "vector"), ("ex1_Log1pAbs", "double_buffer"),
                                        ("r10_AbsDifference", "vector"), ("r11_SoftClip", "vector")])
def test_a_ladder_task_s_first_kernel_lowered_into_its_rung_computes_it_with_vector_instructions(task, rung, tmp_path):
    path = tmp_path / f"{task}.py"
    path.write_text(ladder.task_source(task)[1])
    own = _form(task, rung)
    lowered = vectorized_rung(own, _form(task, "first"))
    assert lowered is not None and _without_formula(lowered) == _without_formula(own)
    profile = _profiled(path, lowered, tmp_path)
    assert rung_of(profile) == rung and profile.stages.scalar_math_calls == 0


@pytest.mark.parametrize("start", ["the system's", "the ladder's"])
def test_a_vector_kernel_s_instructions_move_into_the_double_buffered_rung(start, tmp_path):
    """The step from a single-buffered vector kernel to the double-buffered rung: its run of
    instructions, the in-place tile read as the input before it is overwritten and as the output
    after (-5's p4 seed 1 showed that rung to the model, which broke it)."""
    path = tmp_path / "ex1_Log1pAbs.py"
    path.write_text(ladder.task_source("ex1_Log1pAbs")[1])
    vector = (vectorized_rung(_form("ex1_Log1pAbs", "vector"), _form("ex1_Log1pAbs", "first")) if start == "the system's"
              else _form("ex1_Log1pAbs", "vector"))
    moved = vectorized_rung(_form("ex1_Log1pAbs", "double_buffer"), vector)
    assert moved is not None and "Ln(c, " in moved and "(v, " not in moved
    assert rung_of(_profiled(path, moved, tmp_path)) == "double_buffer"


@pytest.mark.parametrize("task", ["45_ReLU6", "p1_Expm1", "p2_Cube"])
def test_the_climb_pilot_s_first_kernels_lowered_into_the_vector_rung_compute_their_task(task, tmp_path):
    """The kernels bench.climb starts from (archived: the model's own first kernels)."""
    path = PILOT / f"{task}.py" if task.startswith("p") else REPOSITORY / "suites" / "cpu" / "level1" / f"{task}.py"
    brief = task_brief(load_task(path, max_bytes=1 << 22), get_backend("npu-twin"), "kernel")
    item = next(i for i in speed_rungs("npu-twin")["elementwise"] if i.name == "vector_rung_elementwise_ex1_Log1pAbs")
    rung = in_task_terms(item, brief.signature).item.content
    lowered = vectorized_rung(rung, archived_kernel(task))
    assert lowered is not None and "Ln(" not in lowered  # the rung's own formula is gone
    assert rung_of(_profiled(path, lowered, tmp_path)) == "vector"


@pytest.mark.parametrize("case", ["already vector", "a name from other locals", "a row reduction", "too many tiles"])
def test_what_it_cannot_lower_is_refused(case):
    first = _form("ex1_Log1pAbs", "first")
    rung = _form("ex1_Log1pAbs", "vector")
    if case == "too many tiles":  # 128 KiB tiles: the one scratch tile the formula needs no longer fits beside it
        rung = rung.replace("constexpr int64_t TILE = 8192;", "constexpr int64_t TILE = 32768;")
    start = {
        "already vector": _form("ex1_Log1pAbs", "vector"),
        "a name from other locals": first.replace("    for (int64_t i = begin;", "    const float shift = (float)per;\n"
                                                  "    for (int64_t i = begin;").replace("logf(1.0f + a)", "logf(shift + a)"),
        "a row reduction": _form("ex2_MeanAbsOverRows", "first"),
        "too many tiles": first,
    }[case]
    assert vectorized_rung(rung, start) is None


@pytest.mark.parametrize("task", ["ex2_MeanAbsOverRows", "p3_RowMaxAbs", "p4_RowRange"])
def test_a_row_reduction_s_accumulators_become_tile_reductions_and_compute_the_task(task, tmp_path):
    """A sum, a maximum (std::max), a minimum and a maximum by `if` (p4: two accumulators, two
    reductions of the same tile): the row rung's start, compute run, fold and row result replaced."""
    if task.startswith("ex"):
        path, start = tmp_path / f"{task}.py", _form(task, "first")
        path.write_text(ladder.task_source(task)[1])
    else:
        path, start = PILOT / f"{task}.py", archived_kernel(task)
    brief = task_brief(load_task(path, max_bytes=1 << 22), get_backend("npu-twin"), "kernel")
    item = next(i for i in speed_rungs("npu-twin")["row_reduction"] if i.name == "vector_rung_row_reduction_ex2_MeanAbsOverRows")
    lowered = vectorized_rows(in_task_terms(item, brief.signature).item.content, start)
    assert lowered is not None and "float acc = 0.0f;" not in lowered
    assert {"p3_RowMaxAbs": "ReduceMax(", "p4_RowRange": "ReduceMin("}.get(task, "ReduceSum(") in lowered
    assert rung_of(_profiled(path, lowered, tmp_path)) == "vector"


def test_a_row_reduction_already_in_the_ub_scalar_form_is_lowered_too(tmp_path):
    """The system's own ub_scalar kernel of p3_RowMaxAbs (its first kernel merged into the row rung)
    as the start: the formula loop over the tile read, the row's result gathered at r - r0."""
    path = PILOT / "p3_RowMaxAbs.py"
    brief = task_brief(load_task(path, max_bytes=1 << 22), get_backend("npu-twin"), "kernel")
    rungs = {i.name: in_task_terms(i, brief.signature).item.content for i in speed_rungs("npu-twin")["row_reduction"]
             if i.name.endswith("_ex2_MeanAbsOverRows")}
    ub_scalar = merged_rung(rungs["ub_scalar_rung_row_reduction_ex2_MeanAbsOverRows"], archived_kernel("p3_RowMaxAbs"))
    lowered = vectorized_rows(rungs["vector_rung_row_reduction_ex2_MeanAbsOverRows"], ub_scalar)
    assert lowered is not None and "ReduceMax(" in lowered and "tile.GetValue" not in lowered
    assert rung_of(_profiled(path, lowered, tmp_path)) == "vector"


@pytest.mark.parametrize("case", ["a product", "the result read from memory", "two outputs per row",
                                  "an update reading another accumulator"])
def test_a_row_reduction_it_cannot_lower_is_refused(case):
    first = _form("ex2_MeanAbsOverRows", "first")
    start = {"a product": first.replace("float sum = 0.0f;", "float sum = 1.0f;").replace("sum += v < 0.0f ? -v : v;", "sum *= v;"),
             "the result read from memory": first.replace("sum / (float)cols", "sum / xGm.GetValue(r)"),
             "an update reading another accumulator": first.replace(  # an online log-sum-exp: sequential
                 "float sum = 0.0f;", "float sum = 0.0f, top = -1e30f;").replace(
                 "sum += v < 0.0f ? -v : v;", "top = std::max(top, v);\n            sum += expf(v - top);"),
             "two outputs per row": first.replace("outGm.SetValue(r, sum / (float)cols);",
                                                  "outGm.SetValue(r, sum);\n        outGm.SetValue(r, sum);")}[case]
    assert vectorized_rows(_form("ex2_MeanAbsOverRows", "vector"), start) is None
