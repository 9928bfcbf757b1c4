"""What an episode shows the model from memory, and the record of what it showed.

DESIGN.md section 3, "What a prompt may show": exemplar code only from feasible kernels (a
1.5B model copied whatever code it was shown, broken or not); a failed attempt of this operator
only fenced and marked as such, never another operator's failure record; the worked example is
the memory's one decision per draft (memory_actor/slots.py): the generic example alone (bare),
or the family's first rung or verified example (its ladder, issue 54) or a banked kernel of the
task's own family and signature shape, shown as that operator's own task and answer, with or
without the ranked items. No kernel or lesson of another family reaches a prompt
(memory_actor/scope.py), and a kernel only in the task's own names (actors/renaming.py). The task's family and shape are the brief's
(actors/briefing.py), never read again here. Credit and provenance follow what reached the prompt.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path
from typing import NamedTuple

import structlog

from actors.code_extraction import defines_entry_point
from actors.messages import ContextItem, Exemplar, ShownItem, Stage, TaskBrief
from actors.renaming import InTaskTerms, in_task_terms
from memory_actor.items import MemoryItem
from memory_actor.ladder import task_source
from memory_actor.messages import Retrieval
from memory_actor.scope import in_scope
from memory_actor.slots import BARE, CROSS_BACKEND, GENERIC, RANKED, SlotOutcome, SlotRequest

log = structlog.get_logger("evokernel.context")

FEASIBLE_GATE = "ok"


def stage_q(item: MemoryItem, stage: Stage) -> float | None:
    return item.q_draft if stage == "draft" else item.q_refine


def is_feasible_trace(item: MemoryItem) -> bool:
    return item.kind == "trace" and item.verdict is not None and item.verdict.gate == FEASIBLE_GATE


def context_item(item: MemoryItem, stage: Stage) -> ContextItem:
    summary = item.summary or (item.name or "")
    failed = item.kind == "trace" and not is_feasible_trace(item)
    if item.kind == "trace" and item.verdict is not None:
        latency = f", {item.verdict.latency_ms:.4g} ms" if item.verdict.latency_ms else ""
        summary = f"{summary} [{item.verdict.gate}{latency}]".strip()
    return ContextItem(id=item.id, kind=item.kind, summary=summary, content=item.content, task=item.task_id,
                       q=stage_q(item, stage), core=item.kind == "api" and "core" in item.tags, failed=failed,
                       reason=item.verdict.reason if failed and item.verdict is not None else "")


def shown_as(item: MemoryItem, brief: TaskBrief, stage: Stage) -> InTaskTerms | None:
    """A retrieved item as it may be shown as context, or None: only in its scope (a trace of the
    task's family and signature shape, a lesson of its family that teaches; memory_actor/scope.py);
    a trace only when it is feasible and written in this episode's format (the memory already
    recalls that way; this holds against banks written before it did, and against a ModelNew
    file shown to a model asked for a kernel function); a kernel (a trace, a family's rung or example)
    only in the task's own terms (actors/renaming.py)."""
    if not in_scope(item, brief.family, brief.shape, stage):
        return None
    if item.kind == "trace" and not (is_feasible_trace(item)
                                     and defines_entry_point(item.content, brief.candidate_format)):
        return None
    return in_task_terms(item, brief.signature)


# -- the decision beyond the brief: bare, the family's rung or example, or a kernel of the family

# Where a draft may also be shown the operator's own verified kernel of another backend: the
# language the model knows carries the formula into the one it does not (issue 64).
CROSS_BACKEND_OF = {"npu": "cpu", "npu-twin": "cpu"}


def slot_request(brief: TaskBrief, retry: bool, start_from_rung: bool = False,
                 cross_backend: bool = False, start_from: str | None = None) -> SlotRequest:
    """What the memory needs to list this draft's options (memory_actor/slots.py): the family's
    first rung and example only where the brief says a prompt of this task may show them; with
    `start_from_rung` the draft shows the rung whatever the values say (`start_from`: the first of
    these options the bank offers); with `cross_backend` (an
    Ascend C draft) the operator's own C kernel from the bank is an option too."""
    return SlotRequest(task_id=brief.task_id, family=brief.family, shape=brief.shape,
                       context="retry" if retry else "fresh", example=brief.example, rung=brief.rung,
                       start=start_from or ("rung" if start_from_rung else None),
                       cross_backend=CROSS_BACKEND_OF.get(brief.backend) if cross_backend else None)


def cross_backend_kernel(item: MemoryItem) -> MemoryItem:
    """The operator's own kernel of another backend as a draft shows it: pinned as it is (another
    language: nothing to rename), said to be the formula to carry over."""
    summary = (f"this very operator, written in C for the {item.backend} backend and verified correct there: "
               "carry its formula into your kernel (not its C types, loops or signature)")
    return item.model_copy(update={"summary": summary})


def rung_fits(brief: TaskBrief) -> bool:
    """Whether the family's first rung may be this task's start: the brief names it (its bundle
    holds one whose signature maps onto the task's, actors/briefing.py) and the task has a kernel
    signature it is shown in (no kernel crosses families or signature shapes)."""
    return brief.rung is not None and bool(brief.signature)


def scope(brief: TaskBrief) -> dict[str, str]:
    """The retrieval's scope (RetrievalRequest.family, .shape): ranked items of this family only."""
    return {"family": brief.family, "shape": brief.shape}


def trace_tags(brief: TaskBrief) -> list[str]:
    """Tags of a stored trace that make it a slot candidate for tasks of its family and shape."""
    return [f"family:{brief.family}", f"shape:{brief.shape}"]


class DraftShown(NamedTuple):
    """What a draft's prompt may show of a retrieval, each kernel in the task's own terms."""

    exemplar: Exemplar | None  # the slot's kernel, or the family's rung or example, as the worked example
    pinned: MemoryItem | None  # the family's rung or example, also pinned before the ranked items
    items: list[MemoryItem]  # the context items in order (the slot's kernel first where it is no worked example)
    in_slot: MemoryItem | None  # what fills the slot, as shown
    renamed: dict[str, dict[str, str]]  # item id -> the names replaced to show it (provenance)


def draft_context(retrieval: Retrieval, brief: TaskBrief, task_path: str | None) -> DraftShown:
    """What the memory's slot choice and its ranked items put in a draft's prompt: only what
    `shown_as` allows, renamed into the task's signature (actors/renaming.py). The slot's item is
    a banked kernel, or a bundle example of the family (its first rung or its example), as the worked example
    (with its own operator's task); the rung or example also as a pinned item (shown before the
    ranked items, never cut) for a model not shown kernels as examples: the prompt shows it once.
    A kernel that cannot be shown as a worked example here (no reference source beside this
    task) is the first context item instead, beside the generic example."""
    if (retrieval.slot is not None and retrieval.slot_item is not None
            and retrieval.slot.option.removesuffix(RANKED) == CROSS_BACKEND):
        own = cross_backend_kernel(retrieval.slot_item)
        ranked = [terms.item for item in retrieval.items if item.id != own.id
                  and (terms := shown_as(item, brief, "draft")) is not None]
        return DraftShown(None, own, ranked, own, {})
    slot = shown_as(retrieval.slot_item, brief, "draft") if retrieval.slot_item is not None else None
    in_slot = slot.item if slot is not None else None
    ranked = [terms for item in retrieval.items if (in_slot is None or item.id != in_slot.id)
              and (terms := shown_as(item, brief, "draft")) is not None]
    exemplar, pinned = None, None
    if slot is not None and retrieval.slot is not None and defines_entry_point(slot.item.content,
                                                                               brief.candidate_format):
        task = exemplar_brief(slot.item, brief, task_path, slot.signature)
        exemplar = Exemplar(item_id=slot.item.id, task=task, code=slot.item.content) if task is not None else None
        pinned = slot.item if retrieval.slot.kind == "example" else None  # a bundle item (rung or example), not a kernel
    items = [terms.item for terms in ranked]
    if in_slot is not None and pinned is None:
        items.insert(0, in_slot)  # the prompt keeps it in one place
    renamed = {terms.item.id: terms.renamed for terms in [*ranked, *([slot] if slot is not None else [])]}
    return DraftShown(exemplar, pinned, items, in_slot, renamed)


def slot_outcome(retrieval: Retrieval, backend: str, shown_ids: list[str]) -> SlotOutcome | None:
    """What the slot actually showed (the budget may have cut a kernel shown as a context item),
    for crediting."""
    choice = retrieval.slot
    if choice is None:
        return None
    key, kind, option = GENERIC, "generic", ""
    if choice.kind != "generic" and choice.chosen in shown_ids:  # as the worked example or a context item
        key, kind = choice.chosen, choice.kind
        # an example's declared option (a rung's `rung`): its candidate's, else the choice's own
        option = next((c.option for c in choice.candidates if c.key == key),
                      choice.option.removesuffix(RANKED) if choice.option != BARE else "")
    ranked = any(item.id in shown_ids and item.id != key for item in retrieval.items)
    return SlotOutcome(backend=backend, family=choice.family, context=choice.context, key=key, kind=kind,  # type: ignore[arg-type]
                       option=option, task_id=choice.task_id, ranked=ranked)


def exemplar_brief(item: MemoryItem, brief: TaskBrief, task_path: str | None,
                   signature: str | None = None) -> TaskBrief | None:
    """The exemplar operator's brief: its reference source from the suite this task comes from
    (a trace item stores its code and signature, not its reference), its size constants from
    that source, and the signature its code is written against (`signature`: the task's own
    when the code was renamed into the task's terms; the trace item's otherwise)."""
    signature = signature or item.task_signature or None
    if brief.candidate_format == "kernel" and not signature:
        return None  # without its signature the example's answer would not match its question
    source = _suite_source(task_path, item.task_id) if task_path and item.task_id else None
    if source is None and item.task_id:  # a family's worked example or a ladder rung: its own task
        try:
            source = task_source(item.task_id)[1]
        except KeyError:
            pass
    if source is None:
        log.debug("exemplar_without_source", item_id=item.id, task=item.task_id)
        return None
    return TaskBrief(task_id=item.task_id or "", backend=brief.backend, reference_source=source,
                     sizes=_size_constants(source), signature=signature, candidate_format=brief.candidate_format)


@cache
def _suite_source(task_path: str, task_id: str) -> str | None:
    """`<task_id>.py` beside this task's file or in a sibling folder (suite/level1, suite/level2)."""
    here = Path(task_path).parent
    candidates = [here / f"{task_id}.py", *sorted(here.parent.glob(f"*/{task_id}.py"))]
    for path in candidates:
        try:
            return path.read_text(encoding="utf-8")
        except OSError:
            continue
    return None


def _size_constants(source: str) -> dict[str, int]:
    """Module-level integer constants (batch_size = 16), read, not executed."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return {}
    sizes: dict[str, int] = {}
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and isinstance(node.value, ast.Constant) and type(node.value.value) is int):
            sizes[node.targets[0].id] = node.value.value
    return sizes


# -- what was shown -------------------------------------------------------------------------

def shown_items(shown_ids: list[str], known: dict[str, tuple[MemoryItem, str]], stage: Stage,
                example_id: str | None, renamed: dict[str, dict[str, str]] | None = None) -> list[ShownItem]:
    """Provenance records of the items that reached the prompt, in prompt order; `known` maps an
    id to its item and role (context, api, child, start), `renamed` an id to the names replaced
    to show it in the task's terms (the record, and so the credit, stays the item's)."""
    records = []
    for item_id in shown_ids:
        if item_id not in known:
            continue
        item, role = known[item_id]
        records.append(ShownItem(id=item.id, kind=item.kind, task=item.task_id, q=stage_q(item, stage),
                                 role="example" if item_id == example_id else role,  # type: ignore[arg-type]
                                 renamed=(renamed or {}).get(item_id, {})))
    return records


def credited_ids(shown: list[ShownItem], static_ids: set[str] | frozenset[str] = frozenset()) -> list[str]:
    """What the attempt's reward goes to: every item shown, API items and the family's
    example included (an example that hurts sinks), but the static brief (`static_ids`, the backend's core API items):
    every prompt of every arm shows those, so there is no difference to learn from."""
    return [s.id for s in shown if s.id not in static_ids]
