"""The variable parts of a prompt, fitted into a character budget.

Free text (the reference, the previous attempt, the profile) is cut at its tail with a
visible marker. Memory items are kept or dropped whole: credit goes to exactly the items a
prompt showed (DESIGN.md section 3), and half a kernel is neither fair to credit nor safe to
show a small model, which copies what it sees. Pinned items (the backend's core API items)
are never dropped.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import structlog

from npu_pool.verdict import ProfileReport

log = structlog.get_logger("evokernel.prompts")

NONE = "(none)"
CUT_MARKER_ROOM = 80  # characters a cut's marker line takes, at most


def cut(text: str, limit: int, what: str) -> str:
    """`text` shortened to about `limit` characters, head kept, with a visible marker."""
    if len(text) <= limit:
        return text
    dropped = len(text) - max(limit, 0)
    log.info("prompt_truncated", section=what, dropped_chars=dropped, kept_chars=max(limit, 0))
    return text[: max(limit, 0)].rstrip() + f"\n[... {dropped} characters of {what} cut to fit the prompt budget ...]"


@dataclass
class TextSection:
    """Free text, cut at its tail."""

    name: str
    text: str

    def size(self) -> int:
        return len(self.text)

    def shrink(self, excess: int) -> int:
        """Free about `excess` characters; returns how many were freed."""
        keep = max(len(self.text) - excess, 0)
        before = len(self.text)
        self.text = cut(self.text, keep, self.name)
        return max(before - keep, 0)

    def render(self) -> str:
        return self.text

    def shown_ids(self) -> list[str]:
        return []


@dataclass
class FeedbackSection:
    """An earlier attempt: why it failed, then its code, fenced. The code goes whole or not at
    all (a head cut inside it left an open fence, and the rest of the prompt inside the model's
    code block: small models then answered with a fragment); then the head is cut at its tail."""

    name: str
    head: str
    code: str = ""  # the fenced block, or "" when there is none to show
    code_cut: bool = False

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
            log.info("prompt_truncated", section=self.name, dropped_chars=len(self.code), kept_chars=0, part="code")
            excess -= before - self.size()
        if excess > 0:  # the cut's marker takes room too
            self.head = cut(self.head, max(len(self.head) - excess - CUT_MARKER_ROOM, 0), self.name)
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
    """Memory items, most valuable first; dropped whole, least valuable first; pinned ones stay."""

    name: str
    items: list[Block]
    pinned: list[Block] = field(default_factory=list)
    dropped: int = 0

    def _text(self, blocks: list[Block], dropped: int) -> str:
        parts = [b.text for b in blocks]
        if dropped:
            parts.append(f"[... {dropped} more item(s) of {self.name} cut to fit the prompt budget ...]")
        return "\n\n".join(parts) or NONE

    def size(self) -> int:
        return len(self.render())

    def shrink(self, excess: int) -> int:
        """Keep the items, in rank order, that still fit once `excess` characters are freed: a
        large item gives way to smaller ones ranked after it rather than taking them with it."""
        before = self.size()
        target = before - excess
        kept: list[Block] = []
        for block in self.items:
            trial = self._text([*self.pinned, *kept, block], self.dropped + len(self.items) - len(kept) - 1)
            if len(trial) <= target:
                kept.append(block)
        dropped = [b.item_id for b in self.items if b not in kept]
        if dropped:
            log.info("prompt_truncated", section=self.name, dropped_items=len(dropped), item_ids=dropped)
        self.dropped += len(self.items) - len(kept)
        self.items = kept
        return before - self.size()

    def render(self) -> str:
        return self._text([*self.pinned, *self.items], self.dropped)

    def shown_ids(self) -> list[str]:
        return [b.item_id for b in [*self.pinned, *self.items]]


Section = TextSection | FeedbackSection | ItemSection


def fit_sections(sections: list[Section], room: int) -> bool:
    """Shrink the sections, last listed (least important) first, until they fit in `room`
    characters; returns whether anything was cut."""
    excess = sum(s.size() for s in sections) - room
    truncated = False
    for section in reversed(sections):
        if excess <= 0:
            break
        freed = section.shrink(excess)
        truncated = truncated or freed > 0
        excess -= freed
    return truncated


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
    parts += [f"hint: {hint}" for hint in profile.hints]
    return "\n".join(parts)
