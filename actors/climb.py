"""The climb (issue 65, point 2): a refinement of a feasible kernel may be shown the next rung up
of the ladder for its family and signature shape, renamed into the task's terms, with the current
kernel's formula to carry over, as the option of the refine decision (memory_actor/slots.py, the
contexts `refine@first`, `refine@ub_scalar` and `refine@vector`) whose value learns from the
measured speedup.

A small model finishes what is shaped like what it is shown (v4, v5): asked for "a faster
version" of a correct scalar Ascend C kernel it repeated it or broke it (45_ReLU6 ended at 1.0x).
So the refine prompt says what the profile showed (the twin's modelled time per stage: scalar,
copy, vector; which dominates) and, when the decision shows it, the next rung up: a verified
kernel of the same family and shape one step faster (`ub_scalar`: tiles copied through UB, the
formula still on the scalar unit over the tile, which the model carries over word for word;
`vector`: a tile loop through UB with the family's vector instructions; `double_buffer`: the same
through two-buffer queues), whose computation the model replaces with its own kernel's formula.
Where the family has no rung of the next form for the task's shape, the next form up that it has.

Where a kernel stands on the ladder is read from its modelled profile: no copy through UB is the
first rung's form (scalar GlobalTensor access), copies without a vector instruction the
ub_scalar rung's, copies with vector instructions and no double buffering the vector rung's,
double-buffered blocks the top. A backend without a modelled profile (measured timing: C, CUDA, a
device) has no climb.
"""

from __future__ import annotations

import re
import textwrap
from functools import cache

from actors.climb_merge import merged_rung
from actors.climb_vectorize import vectorized_rung
from actors.climb_vectorize_rows import vectorized_rows
from actors.messages import ClimbRung, StartPoint, TaskBrief
from actors.renaming import in_task_terms
from actors.signature_shape import renaming
from memory_actor import ladder
from memory_actor.items import MemoryItem
from memory_actor.messages import Retrieval
from memory_actor.slots import GENERIC, SlotOutcome, SlotRequest, is_refine
from npu_pool.verdict import ProfileReport, StageProfile

CLIMBS_FROM = ladder.RUNGS[:-1]  # the rungs a refinement can climb from (the top has nowhere to go)


def rung_of(profile: ProfileReport | None) -> str | None:
    """Where a feasible kernel stands on the ladder, by its modelled profile: `first` (nothing copied
    through UB: scalar access to global memory), `ub_scalar` (tiles through UB, no vector
    instruction), `vector` (tiles through UB and vector instructions, single-buffered),
    `double_buffer` (blocks counted as double buffered); None without a modelled profile."""
    stages = profile.stages if profile is not None else None
    if stages is None:
        return None
    if stages.double_buffered_blocks > 0:
        return "double_buffer"
    if stages.copy_in_us <= 0 and stages.copy_out_us <= 0:
        return "first"
    return "vector" if stages.vector_instructions > 0 else "ub_scalar"


def rungs_above(rung: str | None) -> tuple[str, ...]:
    """The ladder's forms above `rung`, nearest first; none above the top or off the ladder."""
    if rung not in CLIMBS_FROM:
        return ()
    return ladder.RUNGS[ladder.RUNGS.index(rung) + 1:]


def next_rung(rung: str | None) -> str | None:
    above = rungs_above(rung)
    return above[0] if above else None


@cache
def _speed_rungs(backend: str) -> dict[str, list[MemoryItem]]:
    from memory_actor.seeding import speed_rungs

    try:
        return speed_rungs(backend)
    except ValueError:  # a backend without a bundle has no ladder
        return {}


def climb_name(backend: str, family: str, signature: str | None, rung: str) -> str | None:
    """The api item name of the family's first `rung` whose signature maps onto the task's (it is
    shown renamed into the task's names); None where none does."""
    if not signature:
        return None
    return next((item.name for item in _speed_rungs(backend).get(family, [])
                 if item.tag_values().get("rung") == rung and renaming(item.task_signature, signature)), None)


def climb_request(brief: TaskBrief, profile: ProfileReport | None, past: str | None = None) -> SlotRequest | None:
    """The refine decision's request for a refinement of a kernel with this profile: the context
    is the kernel's rung, the option the nearest rung above it (and above `past`, a form whose
    proposal from this kernel was already tried) of the task's family and shape; None where there
    is no such rung for this task (the decision is then not taken)."""
    here = rung_of(profile)
    if brief.candidate_format != "kernel":
        return None
    beyond = rungs_above(past) if past in CLIMBS_FROM else () if past is not None else None
    # the nearest form above that the family has for this shape (not every family has every form)
    name = next((found for above in rungs_above(here) if beyond is None or above in beyond
                 if (found := climb_name(brief.backend, brief.family, brief.signature, above)) is not None), None)
    if name is None:
        return None
    return SlotRequest(task_id=brief.task_id, family=brief.family, shape=brief.shape, context=f"refine@{here}",
                       climb=name)


def formula_lines(code: str) -> str:
    """The current kernel's computation, to carry over into the next rung's form: its outermost
    loop that writes the data (SetValue, a vector instruction, a copy out: the loop over the
    block's share, with what it computes), else the lines that read or write the data."""
    lines = code.splitlines()
    writes = re.compile(r"\b(SetValue|DataCopy|DataCopyPad)\s*\(|\b[A-Z][A-Za-z]+\s*\(\s*\w+\s*,\s*\w+")
    start = 0
    while start < len(lines):
        if re.match(r"\s*for\s*\(", lines[start]) and "{" in lines[start]:
            depth, end = 0, None
            for i in range(start, len(lines)):
                depth += lines[i].count("{") - lines[i].count("}")
                if depth <= 0:
                    end = i
                    break
            if end is not None and any(writes.search(line) for line in lines[start + 1:end]):
                return textwrap.dedent("\n".join(lines[start:end + 1])).strip("\n")
            start = end + 1 if end is not None else start + 1
            continue
        start += 1
    return "\n".join(line for line in lines if re.search(r"\b(GetValue|SetValue)\s*\(", line))


def profile_reading(stages: StageProfile | None) -> str:
    """What the twin's modelled profile says, as the refine prompt shows it: time per stage and
    which dominates, how many blocks and cores, whether the blocks double buffer."""
    if stages is None:
        return ""
    times = stages.times()
    total = sum(times.values()) or 1.0
    dominant = stages.dominant()
    parts = ", ".join(f"{stage} {us:.4g} us" for stage, us in times.items() if us > 0 or stage != "cube")
    math = (f" and {stages.scalar_math_calls} scalar math calls (expf, sqrtf, ...: each a software routine)"
            if stages.scalar_math_calls else "")
    why = {"scalar": f"each element passes GetValue/SetValue alone{math}; tiles in UB and vector instructions remove it",
           "copy": "fewer, larger copies or double buffering (copy-in overlapping compute) lower it",
           "vector": "fewer vector instructions per element lower it",
           "cube": "the cube's work"}[dominant]
    used = min(stages.blocks, stages.vector_cores) if stages.vector_cores else stages.blocks
    buffered = (f"{stages.double_buffered_blocks} of {stages.blocks} blocks double buffered"
                if stages.double_buffered_blocks else "no double buffering")
    return (f"time per stage (modelled, all blocks): {parts}; {dominant} dominates ({times[dominant] / total:.0%}): "
            f"{why}. {stages.blocks} blocks on {used} of {stages.vector_cores} vector cores, {buffered}")


def climb_shown(retrieval: Retrieval, brief: TaskBrief, start: StartPoint) -> ClimbRung | None:
    """The next rung up as the refinement's prompt shows it, where the decision chose it: renamed
    into the task's terms, with its own task's reference and the current kernel's formula, or with
    that formula already in it (`merged`): carried into a ub_scalar rung (actors/climb_merge.py),
    lowered into a vector rung's instructions (actors/climb_vectorize.py, climb_vectorize_rows.py
    for a row reduction); None when the decision
    chose the static brief (or the rung cannot be shown in the task's terms)."""
    choice, item = retrieval.slot, retrieval.slot_item
    if choice is None or not is_refine(choice.context) or choice.kind == "generic" or item is None:
        return None
    terms = in_task_terms(item, brief.signature)
    if terms is None or not item.task_id:
        return None
    try:
        reference = ladder.task_source(item.task_id)[1]
    except KeyError:
        return None
    rung = item.tag_values().get("rung", choice.option)
    merged = (merged_rung(terms.item.content, start.code) if rung == "ub_scalar"
              else vectorized_rung(terms.item.content, start.code) or vectorized_rows(terms.item.content, start.code))
    return ClimbRung(item_id=item.id, rung=rung, task_id=item.task_id, summary=item.summary or "",
                     reference=reference, code=merged or terms.item.content, formula=formula_lines(start.code),
                     renamed=terms.renamed, merged=merged is not None)


def climb_outcome(retrieval: Retrieval, backend: str, shown: ClimbRung | None) -> SlotOutcome | None:
    """What the refine decision showed, sent with the refinement's value update: the rung, or the
    static brief (bare); None where no decision was taken."""
    choice = retrieval.slot
    if choice is None or not is_refine(choice.context) or retrieval.mode == "none":
        return None
    if shown is None:
        return SlotOutcome(backend=backend, family=choice.family, context=choice.context, key=GENERIC,
                           kind="generic", task_id=choice.task_id)
    return SlotOutcome(backend=backend, family=choice.family, context=choice.context, key=shown.item_id,
                       kind="example", option=choice.option, task_id=choice.task_id)
