"""What an episode shows the model from memory, and the record of what it showed.

DESIGN.md section 3, "What a prompt may show": exemplar code only from feasible kernels (a
1.5B model copied whatever code it was shown, broken or not); a failed attempt only as a
short lesson, or fenced and marked as a failed variant of the start point; the worked
example for small models is a feasible kernel of another operator shown as that operator's
own task and answer. Credit and provenance follow what reached the prompt.
"""

from __future__ import annotations

import ast
from collections.abc import Awaitable, Callable
from functools import cache
from pathlib import Path

import structlog

from actors.code_extraction import defines_entry_point
from actors.messages import CandidateFormat, ContextItem, Exemplar, ShownItem, Stage, TaskBrief
from memory_actor.items import MemoryItem
from memory_actor.messages import Retrieval

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


def showable(item: MemoryItem, fmt: CandidateFormat) -> bool:
    """Whether a retrieved item may be shown as context: a trace only when it is feasible and
    written in this episode's format (the memory already recalls feasible traces only; this
    holds against banks written before it did, and against a ModelNew file shown to a model
    asked for a kernel function)."""
    if item.kind != "trace":
        return True
    return is_feasible_trace(item) and defines_entry_point(item.content, fmt)


# -- the exemplar: a feasible kernel of another operator, with that operator's task -------------

def choose_exemplar(items: list[MemoryItem], brief: TaskBrief, task_path: str | None,
                    min_q: float | None = None) -> Exemplar | None:
    """The best-ranked feasible kernel of another operator whose task can be described the same
    way as this one's (its reference source found next to this task's file) and whose draft Q
    is not below `min_q`; None otherwise."""
    for item in items:
        if not is_feasible_trace(item) or not item.task_id or item.task_id == brief.task_id:
            continue
        if min_q is not None and item.q_draft is not None and item.q_draft < min_q:
            continue  # its value says drafts that showed it did worse: the generic example instead
        if not defines_entry_point(item.content, brief.candidate_format):
            continue
        task = exemplar_brief(item, brief, task_path)
        if task is not None:
            return Exemplar(item_id=item.id, task=task, code=item.content)
    return None


EXEMPLAR_RECALL = 3  # feasible kernels of other operators recalled for the kernel slot


async def kernel_slot(retrieval: Retrieval, brief: TaskBrief, task_path: str | None,
                      recall_traces: Callable[[], Awaitable[Retrieval]],
                      min_q: float | None = None) -> tuple[Exemplar | None, MemoryItem | None]:
    """The worked example for drafting: the best-ranked feasible kernel of another operator in
    the shared recall or, failing that, in `recall_traces()` (a recall of its own over feasible
    traces). In the shared recall, knowledge items (seeded practices, lessons) compete for the
    same N slots and, once credited, can push every kernel out, so that the one item a small
    model copies from would never reach it. In value retrieval a kernel whose draft Q is below
    `min_q` is passed over: ranking alone would keep the only banked kernel in the slot however
    often the drafts it led failed (a ReLU kernel as the example for every matmul)."""
    if retrieval.mode == "none":
        return None, None
    floor = min_q if retrieval.mode == "value" else None
    found = choose_exemplar(retrieval.items, brief, task_path, floor)
    if found is None:
        retrieval = await recall_traces()
        found = choose_exemplar(retrieval.items, brief, task_path, floor)
    if found is None:
        return None, None
    return found, next(item for item in retrieval.items if item.id == found.item_id)


def exemplar_brief(item: MemoryItem, brief: TaskBrief, task_path: str | None) -> TaskBrief | None:
    """The exemplar operator's brief: its reference source from the suite this task comes from
    (a trace item stores its code and signature, not its reference), its size constants from
    that source, and its signature from the trace item."""
    if brief.candidate_format == "kernel" and not item.task_signature:
        return None  # without its signature the example's answer would not match its question
    source = _suite_source(task_path, item.task_id) if task_path and item.task_id else None
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


def credited_ids(shown: list[ShownItem]) -> list[str]:
    """What the attempt's reward goes to: every shown item but the API items, which are not
    value-ranked (DESIGN.md section 3) and so have no value to learn."""
    return [s.id for s in shown if s.kind != "api"]
