"""Credit: which items an update credits as shown (shown_credit), and provenance credit: which
items share in a good attempt's reward besides those it was shown (ancestor_credit).

Every trace records `context_ids` (what was in the prompt when it was created) and `parent_id`
(the start point it refined). That makes a DAG of which memories helped create which kernel. When
an attempt works, the memories that helped create its start point, and its start point's start
point, helped too, only less directly: like an eligibility trace in TD(lambda) (MemQ applies the
same idea to memories), the step for the context of the ancestor d start points back is scaled
by (gamma * lambda)^d. Depth 0 is the attempt's own context, credited by the normal update.
"""

from __future__ import annotations

from collections.abc import Container, Mapping
from typing import Any

import structlog

from memory_actor.config import MemoryConfig
from memory_actor.items import MemoryItem
from memory_actor.messages import UnknownRetrieval, ValueUpdate
from memory_actor.values import is_feasible_trace

log = structlog.get_logger("evokernel.memory.bank")


def shown_credit(update: ValueUpdate, known: Container[str],
                 retrievals: Mapping[str, tuple[Any, ...]]) -> tuple[list[str], list[str]]:
    """The items the update credits as shown, and the shown ids it ignores (not KNOWN to the
    bank). Without `shown_ids`, the items of its logged retrieval context (RETRIEVALS: id ->
    (seq, stage, item ids)) and its `item_ids`, all of which must be known."""
    if update.shown_ids is not None:
        # Exactly what reached the prompt. An unknown id (say a start point whose trace was never
        # stored) must not cost the others their credit, so it is skipped, not refused.
        shown = list(dict.fromkeys(update.shown_ids))
        ignored = [item_id for item_id in shown if item_id not in known]
        if ignored:
            log.warning("update names unknown items; ignored", update_id=update.update_id, ids=ignored[:5])
        return [item_id for item_id in shown if item_id in known], ignored
    ids: list[str] = []
    if update.retrieval_id is not None:
        context = retrievals.get(update.retrieval_id)
        if context is None and not update.item_ids:
            raise UnknownRetrieval(f"unknown retrieval {update.retrieval_id!r} and no item ids given")
        ids += context[2] if context else []
    ids = list(dict.fromkeys(ids + list(update.item_ids)))
    unknown = [item_id for item_id in ids if item_id not in known]
    if unknown:
        raise KeyError(f"update {update.update_id}: unknown item ids {unknown[:5]}")
    return ids, []


def provenance_targets(items: Mapping[str, MemoryItem], attempt_id: str, exclude: set[str], gamma_lambda: float,
                       max_depth: int) -> list[tuple[str, int, float]]:
    """(item id, depth, step weight) for the contexts of the attempt's ancestors, nearest first.

    An item appears once, at its smallest depth, and never if it is in `exclude` (the items the
    attempt was shown, which get the full step). Ids no longer in the bank are skipped; a cycle
    in parent ids (which a bank should never hold) ends the walk.
    """
    targets: list[tuple[str, int, float]] = []
    seen = set(exclude)
    visited = {attempt_id}
    attempt = items.get(attempt_id)
    node = attempt.parent_id if attempt is not None else None
    for depth in range(1, max_depth + 1):
        ancestor = items.get(node) if node is not None else None
        if ancestor is None or node in visited:
            break
        visited.add(node)
        weight = gamma_lambda ** depth
        for item_id in ancestor.context_ids:
            if item_id not in seen and item_id in items:
                seen.add(item_id)
                targets.append((item_id, depth, weight))
        node = ancestor.parent_id
    return targets


def ancestor_credit(items: Mapping[str, MemoryItem], attempt: MemoryItem | None, shown: list[str], advantage: float,
                    config: MemoryConfig) -> list[tuple[str, float]]:
    """(item id, step weight) of the items an update credits through the attempt's start-point
    chain, when `provenance_credit` is on. Only a working kernel that beat the stage's baseline
    passes credit back: blame for a failure stays with what the failing prompt showed."""
    if not config.provenance_credit or attempt is None or advantage <= 0 or not is_feasible_trace(attempt):
        return []
    targets = provenance_targets(items, attempt.id, set(shown), config.provenance_gamma_lambda,
                                 config.provenance_max_depth)
    return [(item_id, weight) for item_id, _depth, weight in targets]
