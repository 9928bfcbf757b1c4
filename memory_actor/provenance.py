"""Provenance credit: which items share in a good attempt's reward besides those it was shown.

Every trace records `context_ids` (what was in the prompt when it was created) and `parent_id`
(the start point it refined). That makes a DAG of which memories helped create which kernel. When
an attempt works, the memories that helped create its start point, and its start point's start
point, helped too, only less directly: like an eligibility trace in TD(lambda) (MemQ applies the
same idea to memories), the step for the context of the ancestor d start points back is scaled
by (gamma * lambda)^d. Depth 0 is the attempt's own context, credited by the normal update.
"""

from __future__ import annotations

from collections.abc import Mapping

from memory_actor.items import MemoryItem


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
