"""What an episode shows the model from memory, and the record of what it showed.

DESIGN.md section 3, "What a prompt may show": exemplar code only from feasible kernels (a
1.5B model copied whatever code it was shown, broken or not); a failed attempt of this operator
only fenced and marked as such, never another operator's failure record; the worked example is
the memory's one decision per draft (memory_actor/slots.py): the generic example alone (bare),
or the family's verified example or a banked kernel of the task's own family and signature
shape, shown as that operator's own task and answer, with or without the ranked items. No
kernel or lesson of another family reaches a prompt (memory_actor/scope.py). Credit and
provenance follow what reached the prompt.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import structlog

from actors.code_extraction import defines_entry_point
from actors.families import dominant_family, example_name, rung_name, signature_shape
from actors.messages import ContextItem, Exemplar, ShownItem, Stage, TaskBrief
from memory_actor.items import MemoryItem
from memory_actor.messages import Retrieval
from memory_actor.scope import in_scope
from memory_actor.seeding import BUNDLE_BACKENDS, example_tasks, rung_items
from memory_actor.slots import GENERIC, LADDER_KINDS, SlotOutcome, SlotRequest

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


def showable(item: MemoryItem, brief: TaskBrief, stage: Stage) -> bool:
    """Whether a retrieved item may be shown as context: only in its scope (a trace of the task's
    family and signature shape, a lesson of its family that teaches; memory_actor/scope.py), and
    a trace only when it is feasible and written in this episode's format (the memory already
    recalls that way; this holds against banks written before it did, and against a ModelNew
    file shown to a model asked for a kernel function)."""
    if not in_scope(item, dominant_family(brief.reference_source), signature_shape(brief.signature), stage):
        return False
    if item.kind != "trace":
        return True
    return is_feasible_trace(item) and defines_entry_point(item.content, brief.candidate_format)


# -- the decision beyond the brief: bare, the family's rung or example, or a kernel of the family

def slot_request(brief: TaskBrief, retry: bool, start_from_rung: bool = False) -> SlotRequest:
    """What the memory needs to list this draft's options (memory_actor/slots.py); with
    `start_from_rung` the draft shows the family's first rung whatever the values say."""
    family = dominant_family(brief.reference_source)
    return SlotRequest(task_id=brief.task_id, family=family, shape=signature_shape(brief.signature),
                       context="retry" if retry else "fresh", example=example_name(family), rung=rung_name(family),
                       start="rung" if start_from_rung else None)


def rung_fits(brief: TaskBrief) -> bool:
    """Whether the family's first rung may be this task's start: its bundle holds one whose kernel
    signature has the task's shape (no kernel crosses families or signature shapes)."""
    shape = _rung_shape(brief.backend, dominant_family(brief.reference_source))
    return shape is not None and shape == signature_shape(brief.signature)


@cache
def _rung_shape(backend: str, family: str) -> str | None:
    if backend not in BUNDLE_BACKENDS:
        return None
    rung = rung_items(backend).get(family)
    return signature_shape(rung.task_signature) if rung is not None else None


def scope(brief: TaskBrief) -> dict[str, str]:
    """The retrieval's scope (RetrievalRequest.family, .shape): ranked items of this family only."""
    return {"family": dominant_family(brief.reference_source), "shape": signature_shape(brief.signature)}


def trace_tags(brief: TaskBrief) -> list[str]:
    """Tags of a stored trace that make it a slot candidate for tasks of its family and shape."""
    return [f"family:{dominant_family(brief.reference_source)}", f"shape:{signature_shape(brief.signature)}"]


def slot_contents(retrieval: Retrieval, brief: TaskBrief,
                  task_path: str | None) -> tuple[Exemplar | None, MemoryItem | None]:
    """What the memory's slot choice puts in the prompt: a banked kernel, or the family's first rung
    or example, as the worked example (with its own operator's task); the rung or example also as
    a pinned item (shown before the ranked items, never cut) for a model not shown kernels as
    examples: the prompt shows it once. (None, None) for the generic example. A kernel that cannot
    be shown as a worked example here (no reference source beside this task) is shown as the first
    context item instead (the episode puts it there), beside the generic example."""
    choice, item = retrieval.slot, retrieval.slot_item
    if choice is None or item is None:
        return None, None
    if choice.kind in LADDER_KINDS:  # the family's first rung or its example: bundle items
        if not defines_entry_point(item.content, brief.candidate_format):
            return None, None  # a kernel-format example for a model writing ModelNew files
        task = exemplar_brief(item, brief, task_path)
        return (Exemplar(item_id=item.id, task=task, code=item.content) if task is not None else None), item
    if not is_feasible_trace(item) or not defines_entry_point(item.content, brief.candidate_format):
        return None, None
    task = exemplar_brief(item, brief, task_path)
    return (Exemplar(item_id=item.id, task=task, code=item.content), None) if task is not None else (None, None)


def slot_outcome(retrieval: Retrieval, backend: str, shown_ids: list[str]) -> SlotOutcome | None:
    """What the slot actually showed (the budget may have cut a kernel shown as a context item),
    for crediting."""
    choice = retrieval.slot
    if choice is None:
        return None
    key, kind = GENERIC, "generic"
    if choice.kind != "generic" and choice.chosen in shown_ids:  # as the worked example or a context item
        key, kind = choice.chosen, choice.kind
    ranked = any(item.id in shown_ids and item.id != key for item in retrieval.items)
    return SlotOutcome(backend=backend, family=choice.family, context=choice.context, key=key, kind=kind,  # type: ignore[arg-type]
                       ranked=ranked)


def exemplar_brief(item: MemoryItem, brief: TaskBrief, task_path: str | None) -> TaskBrief | None:
    """The exemplar operator's brief: its reference source from the suite this task comes from
    (a trace item stores its code and signature, not its reference), its size constants from
    that source, and its signature from the trace item."""
    if brief.candidate_format == "kernel" and not item.task_signature:
        return None  # without its signature the example's answer would not match its question
    source = _suite_source(task_path, item.task_id) if task_path and item.task_id else None
    if source is None and item.task_id in example_tasks():  # a family's worked example: its own task
        source = example_tasks()[item.task_id][1]
    if source is None:
        log.debug("exemplar_without_source", item_id=item.id, task=item.task_id)
        return None
    return TaskBrief(task_id=item.task_id or "", backend=brief.backend, reference_source=source,
                     sizes=_size_constants(source), signature=item.task_signature or None,
                     candidate_format=brief.candidate_format)


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
                example_id: str | None) -> list[ShownItem]:
    """Provenance records of the items that reached the prompt, in prompt order; `known` maps an
    id to its item and role (context, api, child, start)."""
    records = []
    for item_id in shown_ids:
        if item_id not in known:
            continue
        item, role = known[item_id]
        records.append(ShownItem(id=item.id, kind=item.kind, task=item.task_id, q=stage_q(item, stage),
                                 role="example" if item_id == example_id else role))  # type: ignore[arg-type]
    return records


def credited_ids(shown: list[ShownItem], static_ids: set[str] | frozenset[str] = frozenset()) -> list[str]:
    """What the attempt's reward goes to: every item shown, API items and the family's
    example included (an example that hurts sinks), but the static brief (`static_ids`, the backend's core API items):
    every prompt of every arm shows those, so there is no difference to learn from."""
    return [s.id for s in shown if s.id not in static_ids]
