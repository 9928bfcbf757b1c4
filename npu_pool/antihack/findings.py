"""What the anti-hack checkers return: `Finding`, and `summarise` for a verdict.

Every checker module imports this one and nothing imports the package's `__init__` from
inside the package, so the checkers form no import circle.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

KernelLanguage = Literal["c", "cpp", "cuda", "ascendc"]


class Finding(BaseModel):
    """One rule hit: `reject` fails the hack gate, `warn` flags the candidate for review."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    rule: str
    severity: Literal["reject", "warn"]
    message: str  # short and actionable: what to do instead
    line: int | None = None


def summarise(findings: list[Finding]) -> tuple[bool, str, str]:
    """(rejected, one-line reason, details): the reason names the first rejecting rule;
    details list every finding, one per line, so the LLM can fix them all at once."""
    ordered = ordered_findings(findings)
    rejects = [f for f in ordered if f.severity == "reject"]
    if rejects:
        first = rejects[0]
        more = f" (and {len(rejects) - 1} more)" if len(rejects) > 1 else ""
        reason = f"anti-hack: {first.rule}{_at(first)}: {first.message}{more}"
    elif ordered:
        reason = f"anti-hack: {len(ordered)} warning(s) for review"
    else:
        reason = "anti-hack: clean"
    details = "\n".join(f"{f.severity} {f.rule}{_at(f)}: {f.message}" for f in ordered)
    return bool(rejects), reason, details


def _at(finding: Finding) -> str:
    return f" (line {finding.line})" if finding.line is not None else ""


def ordered_findings(findings: list[Finding]) -> list[Finding]:
    """Without duplicates, rejects first, then by line."""
    unique: dict[tuple, Finding] = {}
    for finding in findings:
        unique.setdefault((finding.rule, finding.severity, finding.line, finding.message), finding)
    return sorted(unique.values(), key=lambda f: (f.severity != "reject", f.line or 0, f.rule))
