"""The climb's pieces (issue 65, point 2; actors/climb.py): where a kernel stands on the ladder by
its modelled profile, which rung is offered above it for the task's family and shape, the formula
carried over, and the refine prompt that shows the profile's reading and the next rung up in the
task's own names. No compilation here: tests/actors/test_climb_episode.py runs the whole refine
step on the twin."""

from __future__ import annotations

from pathlib import Path

import pytest

from actors.briefing import task_brief
from actors.climb import climb_request, formula_lines, next_rung, profile_reading, rung_of
from actors.config import LLMConfig
from actors.messages import ClimbRung, ContextItem, RefineRequest, StartPoint
from actors.prompt_sections import example_reference, profile_text
from actors.prompting import PromptBuilder
from actors.renaming import in_task_terms
from actors.signature_shape import renaming
from memory_actor import ladder
from memory_actor.seeding import bundle_items, speed_rungs
from npu_pool.backends import get_backend
from npu_pool.tasks.spec import load_task
from npu_pool.verdict import ProfileReport, StageProfile

REPOSITORY = Path(__file__).resolve().parents[2]
PILOT = REPOSITORY / "bench" / "learning" / "pilot_tasks"
SUITE = REPOSITORY / "suites" / "cpu" / "level1"
LOCAL_MODEL = dict(prompt_char_budget=8000, prompt_style="plain", small_model=True, candidate_format="kernel")
# The twin's profile of the elementwise first rung and vector rung on their task (ex1, 64 x 4096; 2026-12-06)
SCALAR = StageProfile(modelled_us=4374.2, scalar_us=104857.6, blocks=24, vector_cores=48, gm_scalar_accesses=1048576)
VECTOR = StageProfile(modelled_us=5.33, copy_in_us=20.7, vector_us=14.5, copy_out_us=20.7, blocks=24, vector_cores=48,
                      vector_instructions=144)
DOUBLE = VECTOR.model_copy(update={"double_buffered_blocks": 24})
# tiles through UB, the formula on the scalar unit (no vector instruction)
UB_SCALAR = StageProfile(modelled_us=120.0, copy_in_us=20.7, copy_out_us=20.7, scalar_us=2800.0, blocks=24,
                         vector_cores=48, scalar_ops=524288, scalar_math_calls=262144)


def profile(stages: StageProfile | None) -> ProfileReport:
    ms = stages.modelled_us / 1e3 if stages else 1.0
    return ProfileReport(median_ms=ms, iqr_ms=0.0, trials=3, baseline_eager_ms=0.0086, speedup_vs_eager=0.0086 / ms,
                         timing="modelled" if stages else "measured", stages=stages)


def brief(path: Path, backend: str = "npu-twin"):
    return task_brief(load_task(path, max_bytes=1 << 22), get_backend(backend), "kernel")


def test_where_a_kernel_stands_is_read_from_its_modelled_profile():
    assert rung_of(profile(SCALAR)) == "first" and next_rung("first") == "ub_scalar"
    assert rung_of(profile(UB_SCALAR)) == "ub_scalar" and next_rung("ub_scalar") == "vector"
    assert rung_of(profile(VECTOR)) == "vector" and next_rung("vector") == "double_buffer"
    assert rung_of(profile(DOUBLE)) == "double_buffer" and next_rung("double_buffer") is None
    assert rung_of(profile(None)) is None and rung_of(None) is None and next_rung(None) is None


def test_the_next_rung_up_is_offered_for_the_task_s_family_and_shape():
    expm1 = brief(PILOT / "p1_Expm1.py")
    first = climb_request(expm1, profile(SCALAR))
    assert first.context == "refine@first" and first.climb == "ub_scalar_rung_elementwise_ex1_Log1pAbs"
    assert first.offered() == [first.climb] and first.family == "elementwise" and first.shape == expm1.shape
    middle = climb_request(expm1, profile(UB_SCALAR))
    assert middle.context == "refine@ub_scalar" and middle.climb == "vector_rung_elementwise_ex1_Log1pAbs"
    vector = climb_request(expm1, profile(VECTOR))
    assert vector.context == "refine@vector" and vector.climb == "double_buffer_rung_elementwise_ex1_Log1pAbs"
    assert climb_request(expm1, profile(DOUBLE)) is None  # the top: nowhere to climb
    assert climb_request(brief(PILOT / "p1_Expm1.py", "cpu"), profile(None)) is None  # C keeps what it has
    # a row reduction climbs its own family's rungs, never the elementwise ones
    rows = climb_request(brief(PILOT / "p3_RowMaxAbs.py"), profile(SCALAR))
    assert rows.climb == "ub_scalar_rung_row_reduction_ex2_MeanAbsOverRows"
    # a shape no speed rung maps onto (constructor scalars) gets no climb rather than another shape's
    # kernel; where the family has no ub_scalar rung for the shape, the nearest form above that it has
    softplus = brief(SUITE / "11_Softplus.py")
    fits = [item.name for item in speed_rungs("npu-twin")["elementwise"]
            if item.tag_values()["rung"] != "double_buffer" and renaming(item.task_signature, softplus.signature)]
    offered = climb_request(softplus, profile(SCALAR))
    assert (offered.climb if offered else None) == (fits[0] if fits else None)
    assert not {"vector_rung_elementwise_ex1_Log1pAbs", "ub_scalar_rung_elementwise_ex1_Log1pAbs"} & set(fits)
    scan = brief(SUITE / "37_Cumsum.py")
    offered = climb_request(scan, profile(SCALAR))  # the scan family has a vector rung and no ub_scalar rung
    assert offered.context == "refine@first" and offered.climb == "vector_rung_scan_r14_CumsumOfSquares"


def test_the_formula_carried_over_is_the_scalar_kernel_s_loop_body():
    scalar = next(r for r in ladder.rungs("ascendc") if r.task_id == "ex1_Log1pAbs" and r.rung == "first")
    formula = formula_lines(scalar.content)
    assert formula.lstrip().startswith("for (int64_t i = begin; i < end; ++i) {")
    assert "logf(1.0f + a)" in formula and "xGm.SetGlobalBuffer" not in formula
    rows = next(r for r in ladder.rungs("ascendc") if r.task_id == "ex2_MeanAbsOverRows" and r.rung == "first")
    assert "sum += v < 0.0f ? -v : v;" in formula_lines(rows.content)  # the innermost loop that writes


def test_the_profile_says_which_stage_dominates():
    scalar = profile_text(profile(SCALAR))
    assert "scalar 1.049e+05 us" in scalar and "scalar dominates (100%)" in scalar and "24 blocks on 24 of 48" in scalar
    vector = profile_text(profile(VECTOR))
    assert "copy dominates" in vector and "no double buffering" in vector
    assert "24 of 24 blocks double buffered" in profile_text(profile(DOUBLE))
    assert "time per stage" not in profile_text(profile(None))  # measured timing: no stages
    # scalar math calls the twin charged are named where the scalar stage dominates
    assert "scalar math" not in scalar
    with_math = profile_text(profile(SCALAR.model_copy(update={"scalar_math_calls": 1048576})))
    assert "GetValue/SetValue alone and 1048576 scalar math calls (expf, sqrtf" in with_math


def _climb_request(task_path: Path, budget: int) -> tuple[RefineRequest, ClimbRung]:
    task = brief(task_path)
    rung = next(i for i in bundle_items("npu-twin") if i.name == "vector_rung_elementwise_ex1_Log1pAbs")
    terms = in_task_terms(rung, task.signature)
    scalar = next(r for r in ladder.rungs("ascendc") if r.task_id == "ex1_Log1pAbs" and r.rung == "first")
    code = scalar.content.replace("logf(1.0f + a)", "v > 0.0f ? v : 0.0f")
    climb = ClimbRung(item_id=rung.id, rung="vector", task_id=rung.task_id, summary=rung.summary,
                      reference=ladder.task_source(rung.task_id)[1], code=terms.item.content,
                      formula=formula_lines(code), renamed=terms.renamed)
    start = StartPoint(id="start", code=code, latency_ms=4.37, speedup_vs_eager=0.002,
                       profile=profile_text(profile(SCALAR)))
    core = [ContextItem(id=i.id, kind=i.kind, summary=i.summary, content=i.content, core=True)
            for i in bundle_items("npu-twin") if "core" in i.tags]  # the static brief's API items, in the system turn
    return RefineRequest(task=task, start=start, best_latency_ms=4.37, climb=climb, api=core), climb


@pytest.mark.parametrize("budget", [8000, 16000])
def test_the_refine_prompt_shows_the_next_rung_in_the_task_s_terms_with_the_formula(budget):
    request, climb = _climb_request(SUITE / "4_ReLU.py", budget)
    prompt = PromptBuilder(LLMConfig(**{**LOCAL_MODEL, "prompt_char_budget": budget}), "kernel").refine(request)
    user = prompt.messages[-1]["content"]
    assert "## The next rung up: vector tiles" in user and "`ex1_Log1pAbs`" in user
    # whole, with its own task; over the local model's budget without its comments but the numbered flag pattern's
    kernel_lines = [line.split("  //")[0].rstrip() for line in climb.code.splitlines()
                    if line.strip() and not line.lstrip().startswith("//")]
    assert all(line in user for line in kernel_lines) and "torch.log1p(torch.abs(x))" in user
    assert "// 1. the tile is in UB before the vector unit reads it" in user
    assert (climb.code.strip() in user) == (budget > 8000)
    assert climb.formula.strip() in user and "v > 0.0f ? v : 0.0f" in user
    assert request.start.code.strip() in user and example_reference(request.task.reference_source) in user
    assert "scalar dominates" in user
    assert user.index("## Its profile") < user.index("## The next rung up") < user.index("## Variants already tried")
    assert sum(len(m["content"]) for m in prompt.messages) <= budget and prompt.over_budget == 0


def test_without_the_rung_the_refine_prompt_is_the_static_brief():
    request, _ = _climb_request(SUITE / "4_ReLU.py", 8000)
    bare = request.model_copy(update={"climb": None})
    user = PromptBuilder(LLMConfig(**LOCAL_MODEL), "kernel").refine(bare).messages[-1]["content"]
    assert "The next rung up" not in user and "ex1_Log1pAbs" not in user and "scalar dominates" in user


def test_the_profile_s_reading_stays_when_a_row_climb_overflows_the_budget():
    """A row reduction's start point and vector rung are the longest pair: over the local model's
    budget, the profile's later lines and the rung's comments give way, never its reading."""
    task = brief(PILOT / "p3_RowMaxAbs.py")
    rung = next(i for i in bundle_items("npu-twin") if i.name == "vector_rung_row_reduction_ex2_MeanAbsOverRows")
    scalar = next(r for r in ladder.rungs("ascendc") if r.task_id == "ex2_MeanAbsOverRows" and r.rung == "first")
    terms = in_task_terms(rung, task.signature)
    climb = ClimbRung(item_id=rung.id, rung="vector", task_id=rung.task_id, reference=ladder.task_source(rung.task_id)[1],
                      code=terms.item.content, formula=formula_lines(scalar.content))
    start = StartPoint(id="s", code=scalar.content, latency_ms=3.28, profile=profile_text(profile(SCALAR)) + "\nhint: x" * 20)
    core = [ContextItem(id=i.id, kind=i.kind, summary=i.summary, content=i.content, core=True)
            for i in bundle_items("npu-twin") if "core" in i.tags]
    prompt = PromptBuilder(LLMConfig(**LOCAL_MODEL), "kernel").refine(
        RefineRequest(task=task, start=start, best_latency_ms=3.28, climb=climb, api=core))
    user = prompt.messages[-1]["content"]
    section = user.split("## Its profile\n")[1].split("\n## ")[0]
    assert section.startswith(profile_reading(SCALAR)) and "cut to fit the prompt budget" in section
    assert "// 1. the tile is in UB before the vector unit reads it" in user and scalar.content.strip() in user
