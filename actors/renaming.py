"""A kernel of another operator shown in the task's own terms (issue 54, point 3).

A small model copies what it is shown (85% of an example's lines, v4) and uses the example's
names without their declarations: so a banked kernel or a family's rung or worked example reaches a
prompt with the current task's argument names, tiling field names and entry name, and what the
model must change is the computation, not the plumbing. The renaming is mechanical: the two
signatures must have one shape (actors/signature_shape.py), so each name of the item's entry
has exactly one counterpart in the task's; an item whose signature cannot be mapped is not
shown at all.

Identifiers only: a name is replaced where it is a whole C/C++ token, never inside another
identifier, a string or character literal, a comment (its words are English: `copy-out` must not
become `copy-y`) or an `#include` line; after `.` or `->` only a tiling field is (`t.x_d0`, never
CUDA's `threadIdx.x`); after `::` nothing is. A replacement that would collide with a name the
code already uses for something else (a local called like the task's argument) refuses the
renaming: the item is not shown rather than shown wrong.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from pydantic import BaseModel, Field

from actors.signature_shape import renaming
from memory_actor.items import MemoryItem
from memory_actor.slots import LADDER_KINDS

_TOKENS = re.compile(r"""
    (?P<skip>//[^\n]*|/\*.*?\*/                      # comments
      |"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'       # string and character literals
      |^[ \t]*\#[ \t]*include[^\n]*)                 # include lines
  | (?P<number>\.?\d(?:[eEpP][+-]|[\w.])*)           # 1e-5f, 0x1F, .5f: not identifiers
  | (?P<name>[A-Za-z_]\w*)
  | (?P<access>\.|->|::)
""", re.VERBOSE | re.DOTALL | re.MULTILINE)


def _names(code: str) -> list[tuple[re.Match[str], str]]:
    """Each identifier token of `code` with how it stands: 'free', 'member' (after . or ->) or
    'qualified' (after ::)."""
    found, after = [], ""
    for token in _TOKENS.finditer(code):
        if token.lastgroup == "name":
            found.append((token, {"::": "qualified", ".": "member", "->": "member"}.get(after, "free")))
        after = token.group() if token.lastgroup == "access" else ""
    return found


def rename_identifiers(code: str, names: Mapping[str, str], members: set[str] | frozenset[str] = frozenset()) -> str | None:
    """`code` with every free identifier in `names` replaced at once (so swaps work), and the
    members in `members` too; None when a new name is already used in `code` for something
    the renaming does not replace."""
    changed = {old: new for old, new in names.items() if old != new}
    if not changed:
        return code
    tokens = _names(code)
    free = {t.group() for t, how in tokens if how == "free"}
    used_members = {t.group() for t, how in tokens if how == "member"}
    for old, new in changed.items():
        if new in free and new not in names:
            return None  # the task's name is the item's local, function or type: not the same thing
        if old in members and new in used_members and new not in members:
            return None
    pieces, last = [], 0
    for token, how in tokens:
        name = token.group()
        if name in changed and (how == "free" or (how == "member" and name in members)):
            pieces += [code[last:token.start()], changed[name]]
            last = token.end()
    return "".join(pieces) + code[last:]


class InTaskTerms(BaseModel):
    """An item as the task's prompt may show it, and the names that were replaced in it."""

    item: MemoryItem
    renamed: dict[str, str] = Field(default_factory=dict, description="the item's name -> the task's, changed ones")
    signature: str | None = Field(None, description="the signature its code now has (the task's, when renamed)")


def shows_kernel(item: MemoryItem) -> bool:
    """Whether `item` holds a kernel written against its own task's signature: a trace, or a
    family's first rung or worked example (an api item with its task, tagged `rung` or `example`)."""
    return item.kind == "trace" or (item.kind == "api" and any(kind in item.tags for kind in LADDER_KINDS))


def in_task_terms(item: MemoryItem, task_signature: str | None) -> InTaskTerms | None:
    """`item` ready for a prompt of a task with entry `task_signature`: unchanged when it holds no
    kernel or the task has no signature (the ModelNew format); its code renamed into the task's
    names when its signature has the task's shape; None when it cannot be (another shape, no
    signature, a name collision): it is not shown."""
    if not shows_kernel(item) or not task_signature:
        return InTaskTerms(item=item, signature=item.task_signature or None)
    names = renaming(item.task_signature, task_signature)
    code = rename_identifiers(item.content, names.names, names.fields) if names is not None else None
    if names is None or code is None:
        return None
    renamed = {old: new for old, new in names.names.items() if old != new}
    if not renamed:
        return InTaskTerms(item=item, signature=item.task_signature)
    return InTaskTerms(item=item.model_copy(update={"content": code}), renamed=renamed, signature=task_signature)
