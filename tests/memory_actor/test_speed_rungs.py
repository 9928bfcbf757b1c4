"""The ladder's speed rungs (issue 65, point 1): above each first rung, where the family has one,
the first rung's formula on the scalar unit over tiles in UB (`ub_scalar`: the copies vectorised,
the formula carried over word for word), the simplest vector form (`vector`: a DataCopy/DataCopyPad
tile loop through the Unified Buffer, the family's vector instructions, the flags in one numbered
pattern or a queue pair, the tail handled, the work split over all blocks) and the double-buffered
form (`double_buffer`). They are bank items of the refine decision only, and each climbs in the
twin's modelled cost.

Every rung file already runs through its backend's gates in test_ladder.py; here the speed rungs'
form (statically), their place in the bank, and what the twin's profile says of them (run with
its profile: slow)."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from actors.families import FAMILIES
from memory_actor import ladder
from memory_actor.seeding import bundle_items, family_rungs, speed_rungs
from npu_pool.antihack import check_kernel_source
from npu_pool.tasks.spec import load_task
from npu_pool.verdict import Candidate
from npu_pool.verifier import evaluate, verify
from tests.npu_pool.harness_support import SMALL_BYTES, harness_config

SPEED = [r for r in ladder.rungs("ascendc") if r.rung != "first"]
# The vector instructions a rung of each family may use: at least one must appear (scan's running
# value is sequential: its vector rung moves the rows through UB and runs the scan there).
VECTOR_CALLS = ("Abs", "Adds", "Muls", "Ln", "Exp", "Add", "Sub", "Mul", "Div", "Max", "Min", "Maxs", "Mins",
                "ReduceSum", "ReduceMax", "ReduceMin", "Axpy", "GatherMask", "Duplicate", "Relu", "Sqrt",
                "Compare", "Select", "Reciprocal")
SEQUENTIAL = {"scan"}


def _id(rung: ladder.Rung) -> str:
    return f"{rung.task_id}.{rung.rung}"


def _calls(code: str) -> set[str]:
    return set(re.findall(r"\b([A-Z]\w*)\s*(?:<[^;()]*>)?\s*\(", code))


def test_the_seven_family_examples_have_a_vector_rung():
    vector = {ladder.task_source(r.task_id)[0] for r in SPEED if r.rung == "vector" and r.task_id.startswith("ex")}
    assert vector == set(FAMILIES)


def test_speed_rungs_are_refine_options_never_a_draft_s():
    """Tagged `decision:refine` under their own rung's word; the draft's `rung` option (the first
    rungs) and its examples never include them; the C side has none (it keeps what it has)."""
    items = {item.name: item for item in bundle_items("npu-twin")}
    refine = [item for items_ in speed_rungs("npu-twin").values() for item in items_]
    assert len(refine) == len(SPEED) and speed_rungs("cpu") == {}
    for item in refine:
        word = item.tag_values()["rung"]
        assert word in ("ub_scalar", "vector", "double_buffer") and item.tag_values()["option"] == word
        assert "decision:refine" in item.tags and items[item.name] is not None
    firsts = {item.id for items_ in family_rungs("npu-twin").values() for item in items_}
    assert firsts.isdisjoint(item.id for item in refine)


@pytest.mark.parametrize("rung", SPEED, ids=_id)
def test_a_speed_rung_moves_data_through_ub_with_the_family_s_vector_instructions(rung):
    """Global memory only through DataCopy/DataCopyPad (no GlobalTensor GetValue/SetValue loop),
    a TPipe with its UB buffers, the family's vector instructions (a ub_scalar rung: none, the
    formula on LocalTensor GetValue/SetValue); the pipes ordered by numbered flag pairs or queues;
    a double-buffered rung's queues hold two buffers; clean at the static gate."""
    code = rung.content
    family = ladder.task_source(rung.task_id)[0]
    globals_ = re.findall(r"GlobalTensor<\w+>\s+([^;]+);", code)
    names = {name.strip() for group in globals_ for name in group.split(",")}
    assert names, "no GlobalTensor"
    for name in names:
        assert not re.search(rf"\b{name}\s*\.\s*(GetValue|SetValue)\b", code), f"{name}: a scalar access to GM"
    assert re.search(r"\bDataCopy(Pad)?\s*\(", code) and "TPipe pipe;" in code and "InitBuffer" in code
    if rung.rung == "ub_scalar":
        assert not _calls(code) & set(VECTOR_CALLS) and re.search(r"\b\w*[tT]ile\s*\.\s*GetValue\s*\(", code)
    else:
        assert family in SEQUENTIAL or _calls(code) & set(VECTOR_CALLS), f"no vector instruction of {VECTOR_CALLS}"
    for set_flag in re.findall(r"SetFlag<HardEvent::(\w+)>", code):  # every flag is waited for where it is set
        assert f"WaitFlag<HardEvent::{set_flag}>" in code
    if rung.rung == "double_buffer":
        assert re.search(r"TQue<TPosition::VECIN, 2>", code) and re.search(r"InitBuffer\(\w+, 2,", code)
    else:
        assert "SetFlag<HardEvent::MTE2_" in code and "// 1." in code  # the numbered pattern starts at the copy-in
    assert "GetBlockIdx()" in code and "GetBlockNum()" in code  # split over every block
    rejected = [f for f in check_kernel_source(code, "ascendc") if f.severity == "reject"]
    assert rejected == []


UB_SCALAR = [r for r in SPEED if r.rung == "ub_scalar"]


def _formula(code: str) -> list[str]:
    """The lines of a kernel's innermost loops, where the data comes from and goes to left out:
    which tensor an element is read from or written to, and at which index."""
    body = re.findall(r"for \([^)]*\) \{[^\n]*\n((?:(?!\s*for ).*\n)*?)\s*\}", code)
    lines = [line.split("//")[0].strip() for block in body for line in block.splitlines() if line.split("//")[0].strip()]
    return [re.sub(r"\b\w+\s*\.\s*SetValue\([^,]*,", "SetValue(_,",
                   re.sub(r"\b\w+\s*\.\s*GetValue\([^()]*\)", "GetValue(_)", line)) for line in lines]


@pytest.mark.parametrize("rung", UB_SCALAR, ids=_id)
def test_a_ub_scalar_rung_carries_its_first_rung_s_formula_word_for_word(rung):
    """The step the small model can take (bench/results/climb-probe-2026-12-06: it copies whole
    kernels and carries a scalar formula over, never rewrites one as vector instructions): the
    ub_scalar rung computes with the first rung's own lines; only where the data comes from changes."""
    first = next(r for r in ladder.rungs("ascendc") if r.task_id == rung.task_id and r.rung == "first")
    formula = _formula(first.content)
    assert formula, "the first rung has no loop"
    assert [line for line in formula if line not in _formula(rung.content)] == []


def _profile(rung: ladder.Rung, tmp: Path):
    path = tmp / f"{rung.task_id}.py"
    path.write_text(ladder.task_source(rung.task_id)[1])
    task = load_task(path, max_bytes=SMALL_BYTES)
    verdict, profile = evaluate(task, Candidate(source=rung.content, format="kernel"),
                                harness_config(backend="npu-twin", correctness_trials=2))
    assert verdict.feasible, f"{_id(rung)}: {verdict.gate}/{verdict.category}: {verdict.reason}\n{verdict.details}"
    assert profile is not None and profile.timing == "modelled" and profile.stages is not None
    return task, profile


@pytest.mark.slow  # each rung and the one below it, profiled on the twin: about 20 s each cold
@pytest.mark.parametrize("rung", SPEED, ids=_id)
def test_a_speed_rung_climbs_in_the_twin_s_modelled_cost(rung, tmp_path):
    """The twin's profile of the rung on its task: no scalar access to global memory, copies in
    and out through UB, the scalar unit on at most two accesses per output element (a reduction's
    result read and stored; a scan's running value is sequential; a ub_scalar rung reads every
    element there and runs no vector instruction), more than one block; a modelled cost below the
    nearest rung beneath it; a double-buffered rung's blocks counted as double buffered, the
    vector rung's not."""
    family = ladder.task_source(rung.task_id)[0]
    lower = [r for r in ladder.rungs("ascendc") if r.task_id == rung.task_id
             and ladder.RUNGS.index(r.rung) < ladder.RUNGS.index(rung.rung)]
    below = lower[-1]  # the nearest rung beneath it that the task has
    (task, profile), (_, under) = _profile(rung, tmp_path), _profile(below, tmp_path)
    stages = profile.stages
    assert stages.gm_scalar_accesses == 0 and stages.copy_in_us > 0 and stages.copy_out_us > 0
    if rung.rung == "ub_scalar":  # the formula on the scalar unit: every element read there
        inputs = sum(math.prod(i.shape) for i in task.inputs)
        assert stages.vector_instructions == 0 and stages.scalar_ops >= inputs
    else:
        assert family in SEQUENTIAL or stages.vector_instructions > 0
        outputs = sum(math.prod(o.shape) for o in task.outputs)
        assert family in SEQUENTIAL or stages.scalar_ops <= 2 * outputs
    assert stages.blocks > 1
    assert profile.median_ms < under.median_ms
    if rung.rung == "double_buffer":
        assert stages.double_buffered_blocks > 0 and under.stages.double_buffered_blocks == 0


@pytest.mark.slow  # every speed rung through the gates again: about 10 s each, builds cached
@pytest.mark.parametrize("rung", SPEED, ids=_id)
def test_a_speed_rung_is_ordered_without_automatic_synchronisation_too(rung, tmp_path):
    """The twin's happens-before check as a kernel built without --cce-auto-sync sees it (the
    scalar unit's hand-offs unordered unless a flag orders them): an example must hold on either
    build, so every hand-off has its flag (tests/memory_actor/test_ladder.py checks the default)."""
    path = tmp_path / f"{rung.task_id}.py"
    path.write_text(ladder.task_source(rung.task_id)[1])
    task = load_task(path, max_bytes=SMALL_BYTES)
    verdict = verify(task, Candidate(source=rung.content, format="kernel"),
                     harness_config(backend="npu-twin", correctness_trials=2, npu_twin={"auto_sync": False}))
    assert verdict.feasible, f"{_id(rung)}: {verdict.gate}/{verdict.category}: {verdict.reason}"
