"""The variable parts of a prompt, fitted into a character budget.

Free text (the previous attempt's details, the profile) is cut at its tail with a visible
marker. Memory items are kept or dropped whole: credit goes to exactly the items a prompt
showed (DESIGN.md section 3), and half a kernel is neither fair to credit nor safe to show a
small model, which copies what it sees. Pinned items (the slot's family example) are not
dropped: only as a prompt's last resort is a pinned kernel shortened, from its tail, inside its
code fence and with a marker (`cut_fenced`).

Cuts are recorded on the section, not logged at once: a prompt builder may try a layout and
abandon it (the pinned example taking the generic one's place), and only the cuts of the prompt
actually sent are logged (`log_cuts`).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass, field

import structlog

from actors.signature_shape import entry_declaration
from npu_pool.verdict import ProfileReport

log = structlog.get_logger("evokernel.prompts")

NONE = "(none)"
CUT_MARKER_ROOM = 80  # characters a cut's marker line takes, at most
REASON_KEPT = 400  # a previous attempt's failure line is never cut below this


def cut(text: str, limit: int, what: str, record: list[dict] | None = None) -> str:
    """`text` shortened to about `limit` characters, head kept, with a visible marker; the cut is
    appended to `record`, or logged when there is none."""
    if len(text) <= limit:
        return text
    dropped = len(text) - max(limit, 0)
    event = dict(section=what, dropped_chars=dropped, kept_chars=max(limit, 0))
    record.append(event) if record is not None else log.info("prompt_truncated", **event)
    return text[: max(limit, 0)].rstrip() + f"\n[... {dropped} characters of {what} cut to fit the prompt budget ...]"


def cut_fenced(text: str, excess: int, what: str, record: list[dict], comment: str = "//", **event: str) -> str:
    """`text`, which ends in a fenced code block, at least `excess` characters shorter: whole
    lines cut from the code's tail, a comment line saying so in their place, the fence still
    closed (an open fence put the rest of a prompt inside the model's code block)."""
    body, close, _ = text.rstrip().rpartition("\n```")
    head, fence, code = body.rpartition("```")
    if not close or not fence:
        return cut(text, len(text) - excess - CUT_MARKER_ROOM, what, record)
    opening, _, code = code.partition("\n")
    lines = code.split("\n")
    target = len(text) - excess
    for keep in range(len(lines) - 1, -1, -1):
        kept = "\n".join(lines[:keep])
        dropped = len(code) - len(kept)
        marker = f"{comment} [... {dropped} characters of {what} cut here to fit the prompt budget ...]"
        shortened = f"{head}{fence}{opening}\n" + (f"{kept}\n" if kept else "") + f"{marker}\n```"
        if len(shortened) <= target or keep == 0:
            record.append(dict(section=what, dropped_chars=dropped, kept_chars=len(kept), part="code tail", **event))
            return shortened
    return text


def drop_comments(text: str, what: str, record: list[dict], comment: str = "//", **event: str) -> str:
    """`text`, which ends in a fenced code block, with its code's comments left out (whole comment
    lines, and comments after code set off by two spaces): the code itself stays whole, so
    nothing it declares goes missing (a kernel cut at its tail lost its members' declarations)."""
    body, close, _ = text.rstrip().rpartition("\n```")
    head, fence, code = body.rpartition("```")
    if not close or not fence:
        return text
    opening, _, code = code.partition("\n")
    lines = [re.sub(rf"\s{{2,}}{re.escape(comment)} .*$", "", line) for line in code.split("\n")
             if not line.lstrip().startswith(comment)]
    kept = "\n".join([f"{comment} (its comments are left out to fit the prompt budget)", *lines])
    if len(kept) >= len(code):
        return text
    record.append(dict(section=what, dropped_chars=len(code) - len(kept), kept_chars=len(kept), part="comments", **event))
    return f"{head}{fence}{opening}\n{kept}\n```"


def log_cuts(cuts: list[dict]) -> None:
    for event in cuts:
        log.info("prompt_truncated", **event)


@dataclass
class TextSection:
    """Free text, cut at its tail."""

    name: str
    text: str
    cuts: list[dict] = field(default_factory=list)

    def size(self) -> int:
        return len(self.text)

    def shrink(self, excess: int) -> int:
        """Free about `excess` characters; returns how many were freed."""
        before = len(self.text)
        self.text = cut(self.text, max(before - excess - CUT_MARKER_ROOM, 0), self.name, self.cuts)  # the marker takes room too
        return before - len(self.text)

    def render(self) -> str:
        return self.text

    def shown_ids(self) -> list[str]:
        return []


@dataclass
class FeedbackSection:
    """An earlier attempt: why it failed, then its code, fenced. The code goes whole or not at
    all (a head cut inside it left an open fence, and the rest of the prompt inside the model's
    code block: small models then answered with a fragment); then the head's details are cut at
    their tail. Its first line, the gate and the failure, stays (up to REASON_KEPT characters):
    it is what the retry must fix."""

    name: str
    head: str
    code: str = ""  # the fenced block, or "" when there is none to show
    code_cut: bool = False
    cuts: list[dict] = field(default_factory=list)

    def render(self) -> str:
        if self.code_cut:
            return f"{self.head}\n(Its code is not repeated here: cut to fit the prompt budget.)"
        return f"{self.head}\nIts code:\n{self.code}" if self.code else self.head

    def size(self) -> int:
        return len(self.render())

    def shrink(self, excess: int) -> int:
        before = self.size()
        if self.code and not self.code_cut:
            self.code_cut = True
            self.cuts.append(dict(section=self.name, dropped_chars=len(self.code), kept_chars=0, part="code"))
            excess -= before - self.size()
        floor = min(len(self.head.split("\n", 1)[0]), REASON_KEPT)
        if excess > 0 and len(self.head) > floor:  # the cut's marker takes room too
            self.head = cut(self.head, max(len(self.head) - excess - CUT_MARKER_ROOM, floor), self.name, self.cuts)
        return max(before - self.size(), 0)

    def shown_ids(self) -> list[str]:
        return []


@dataclass
class Block:
    """One memory item as rendered in a section."""

    item_id: str
    text: str


@dataclass
class ItemSection:
    """Memory items: the pinned ones (the slot's family example) first, then the ranked items, most
    valuable first, then the API items their code names. Ranked and API items are dropped whole,
    least valuable first, each list by its own step (`shrink`, `shrink_api`), so a prompt decides
    what gives way first; a pinned item is only shortened, as a last resort (`shorten_pinned`)."""

    name: str
    items: list[Block]
    pinned: list[Block] = field(default_factory=list)
    api: list[Block] = field(default_factory=list)
    dropped: int = 0
    cuts: list[dict] = field(default_factory=list)

    def _text(self, items: list[Block], api: list[Block], dropped: int) -> str:
        parts = [b.text for b in [*self.pinned, *items, *api]]
        if dropped:
            parts.append(f"[... {dropped} more item(s) of {self.name} cut to fit the prompt budget ...]")
        return "\n\n".join(parts) or NONE

    def size(self) -> int:
        return len(self.render())

    def _keep(self, blocks: list[Block], excess: int, text_of: Callable[[list[Block], int], str]) -> list[Block]:
        """The blocks, in rank order, that still fit once `excess` characters are freed: a large
        block gives way to smaller ones ranked after it rather than taking them with it."""
        target = self.size() - excess
        kept: list[Block] = []
        for block in blocks:
            if len(text_of([*kept, block], self.dropped + len(blocks) - len(kept) - 1)) <= target:
                kept.append(block)
        dropped = [b.item_id for b in blocks if b not in kept]
        if dropped:
            self.cuts.append(dict(section=self.name, dropped_items=len(dropped), item_ids=dropped))
        self.dropped += len(dropped)
        return kept

    def shrink(self, excess: int) -> int:
        """Drop ranked items to free about `excess` characters; returns how many were freed."""
        before = self.size()
        self.items = self._keep(self.items, excess, lambda items, dropped: self._text(items, self.api, dropped))
        return before - self.size()

    def shrink_api(self, excess: int) -> int:
        before = self.size()
        self.api = self._keep(self.api, excess, lambda api, dropped: self._text(self.items, api, dropped))
        return before - self.size()

    def shorten_pinned(self, excess: int, comment: str = "//") -> int:
        """The last resort: the last pinned kernel without its comments, then, if still too long,
        shortened from its code's tail (cut_fenced)."""
        if not self.pinned or excess <= 0:
            return 0
        before = self.size()
        block = self.pinned[-1]
        what = f"the {self.name}'s pinned kernel"
        block.text = drop_comments(block.text, what, self.cuts, comment, item_id=block.item_id)
        if before - self.size() < excess:
            block.text = cut_fenced(block.text, excess - (before - self.size()), what, self.cuts, comment,
                                    item_id=block.item_id)
        return before - self.size()

    def render(self) -> str:
        return self._text(self.items, self.api, self.dropped)

    def shown_ids(self) -> list[str]:
        return [b.item_id for b in [*self.pinned, *self.items, *self.api]]


@dataclass
class ClimbSection:
    """The next rung up a refinement is shown (issue 65): the option the refine decision chose, so
    never cut; over the budget its kernel loses its comments first (the numbered flag comments,
    `// 1. ...`, stay: they are the pattern to keep). Empty where the decision showed no rung."""

    name: str
    item_id: str | None = None
    head: str = ""
    code: str = ""  # the fenced kernel
    tail: str = ""
    cuts: list[dict] = field(default_factory=list)

    def render(self) -> str:
        return f"{self.head}{self.code}\n{self.tail}" if self.item_id else ""

    def size(self) -> int:
        return len(self.render())

    def shrink(self, excess: int) -> int:
        if not self.item_id or excess <= 0:
            return 0
        before = self.size()
        lines = [re.sub(r"\s{2,}// (?!\d\.).*$", "", line) for line in self.code.split("\n")
                 if not re.match(r"\s*// (?!\d\.)", line)]
        self.code = "\n".join(lines)
        if before > self.size():
            self.cuts.append(dict(section=self.name, dropped_chars=before - self.size(), part="comments",
                                  item_id=self.item_id))
        return before - self.size()

    def shown_ids(self) -> list[str]:
        return [self.item_id] if self.item_id else []


Section = TextSection | FeedbackSection | ItemSection | ClimbSection


def fit_sections(steps: list[Callable[[int], int]], excess: int) -> tuple[bool, int]:
    """Run the cutting steps in order (each frees about the excess it is given) until nothing is
    in excess; returns whether anything was cut and what is still in excess."""
    truncated = False
    for step in steps:
        if excess <= 0:
            break
        freed = step(excess)
        truncated = truncated or freed > 0
        excess -= freed
    return truncated, excess


def profile_text(profile: ProfileReport | None) -> str:
    """The start point's profile as a refine prompt shows it."""
    if profile is None:
        return ""
    parts = [f"median {profile.median_ms:.4g} ms (IQR {profile.iqr_ms:.3g} ms over {profile.trials} trials); "
             f"PyTorch eager {profile.baseline_eager_ms:.4g} ms"]
    if profile.timing == "modelled":
        parts[0] = (f"modelled cost {profile.median_ms:.4g} ms (the Ascend C twin's model of the NPU, not a "
                    f"measurement); PyTorch eager modelled {profile.baseline_eager_ms:.4g} ms")
    if profile.achieved_gbps is not None:
        parts.append(f"achieved {profile.achieved_gbps:.3g} GB/s")
    if profile.achieved_gflops is not None:
        parts.append(f"achieved {profile.achieved_gflops:.3g} GFLOP/s")
    parts.append(f"bound: {profile.bound}")
    if profile.stages is not None:  # the twin's modelled time per stage, first: where a faster kernel must save (issue 65)
        from actors.climb import profile_reading

        parts.insert(0, profile_reading(profile.stages))
    # the first line already says the timing is modelled: the profiler's hint saying so again is left out
    parts += [f"hint: {hint}" for hint in profile.hints if not hint.startswith("timing modelled by")]
    return "\n".join(parts)


# -- a worked example's task, in the generic example's form -------------------------------------

def example_reference(source: str) -> str:
    """The reference of a worked example's task as the generic example shows its own: the `Model`
    class alone, without docstrings (imports, size constants and input makers say nothing about
    what it computes; its sizes have their own line). The source itself when it has no such class."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source.strip()
    model = next((node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == "Model"), None)
    if model is None:
        return source.strip()
    for node in ast.walk(model):
        body = getattr(node, "body", None)
        if (isinstance(node, ast.ClassDef | ast.FunctionDef) and len(body) > 1 and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str)):
            node.body = body[1:]
    return ast.unparse(model)


def example_signature(signature: str) -> str:
    """A worked example's entry declaration without its comments (the task's own keeps them: its
    sizes, what the outputs start as)."""
    declaration = entry_declaration(signature)  # the definition to fill (Ascend C) as a declaration
    lines = [kept for line in declaration.splitlines() if (kept := re.sub(r"\s*//.*$", "", line).rstrip()).strip()]
    return "\n".join(lines)
