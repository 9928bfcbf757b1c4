"""Which ranked items may reach a prompt of a given family (issue 41, points 2 and 4).

A banked kernel (a trace) only for operators of its family whose kernel signature has the same
shape: another family's kernel was the worst thing a prompt could hold (v3, C: 3 of 55 drafts
right with ReLU6's kernel in the prompt, 39 of 137 without). A lesson only when it is of the
task's family and says what to do, at the stage it was learnt at (`lesson:fix`, drafting: what
changed between a failed and a later feasible draft of one operator; `lesson:faster`, refining:
what made a refinement faster); a failure
record (`lesson:failure`, and every lesson of a bank from before the tags) is kept for
inspection but never shown. Practices and API items are not scoped.
"""

from __future__ import annotations

from memory_actor.items import MemoryItem

TEACHING_LESSONS = ("fix", "faster")


def trace_scope(family: str, shape: str) -> str:
    return f"trace/{family}/{shape}"


def lesson_scope(family: str, stage: str) -> str:
    return f"lesson/{family}/{stage}"


def item_scope(item: MemoryItem) -> str | None:
    """The scope a ranked item may be shown in; None: any (practice, api); '-': none."""
    tags = item.tag_values()
    if item.kind == "trace":
        return trace_scope(tags["family"], tags.get("shape", "")) if "family" in tags else "-"
    if item.kind == "experience":
        teaches = tags.get("lesson") in TEACHING_LESSONS and "family" in tags
        return lesson_scope(tags["family"], item.stage) if teaches else "-"
    return None


def scopes(family: str, shape: str, stage: str) -> list[str]:
    """The scopes a retrieval for a task of `family` and kernel signature `shape` at `stage` shows."""
    return [trace_scope(family, shape), lesson_scope(family, stage)]


def in_scope(item: MemoryItem, family: str, shape: str, stage: str) -> bool:
    """Whether `item` may be shown to a task of `family` with kernel signature `shape` at `stage`."""
    scope = item_scope(item)
    return scope is None or scope in scopes(family, shape, stage)
