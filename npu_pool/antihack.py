"""The anti-hack gate: static checks that run before anything is compiled or executed.

Two entry points, one per candidate format:
- `check_python_candidate(source)`: a complete `ModelNew` file. Follows `ModelNew.forward`
  into helpers and methods and rejects torch compute there (functions, methods, operators,
  `torch.ops.aten`), fallbacks, the reference `Model`, processes, threads, streams, timer
  patching, tensor subclasses, file and network access and output caches; the C/C++/CUDA
  strings passed to `load_inline` are checked as kernel sources too.
- `check_kernel_source(source, language)`: the one C/C++/CUDA/Ascend C function of the
  kernel-source format.

A finding is `reject` (the candidate is infeasible, gate "hack") or `warn` (it goes on, and
the warning is a flag for the LLM review tier). The rules, why each exists and which
severity it has are listed in docs/antihack.md. Dynamic hacks (uninitialised outputs,
mutated inputs, lowered precision, constants) are the correctness gate's job.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

KernelLanguage = Literal["c", "cpp", "cuda", "ascendc"]
MAX_SOURCE_CHARS = 400_000  # far beyond any kernel; bounds the checker's own work


class Finding(BaseModel):
    """One rule hit: `reject` fails the hack gate, `warn` flags the candidate for review."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    rule: str
    severity: Literal["reject", "warn"]
    message: str  # short and actionable: what to do instead
    line: int | None = None


def check_python_candidate(source: str) -> list[Finding]:
    """All findings for a `ModelNew` file, rejects first, then by line."""
    from npu_pool.antihack_python import check_python

    return _guarded(check_python, source)


def check_kernel_source(source: str, language: KernelLanguage) -> list[Finding]:
    """All findings for one kernel-format source in `language`, rejects first."""
    from npu_pool.antihack_source import check_source

    if language not in ("c", "cpp", "cuda", "ascendc"):
        raise ValueError(f"unknown kernel language {language!r}; expected c, cpp, cuda or ascendc")
    return _guarded(check_source, source, language)


def _guarded(check, source: str, *args) -> list[Finding]:
    """Run a checker; a file it cannot analyse is rejected, never waved through."""
    if len(source) > MAX_SOURCE_CHARS:
        return [Finding(rule="too_large", severity="reject", message=f"the candidate has {len(source)} characters; keep it under {MAX_SOURCE_CHARS}")]
    try:
        return _ordered(check(source, *args))
    except RecursionError:
        return [Finding(rule="too_complex", severity="reject", message="the code is nested too deeply to check; write flatter code")]
    except Exception as exc:  # a checker bug must not let a candidate through unchecked
        import structlog

        structlog.get_logger("npu_pool.antihack").warning("antihack_internal_error", error=f"{type(exc).__name__}: {exc}")
        return [Finding(rule="unanalysable", severity="reject",
                        message=f"the anti-hack checker could not analyse this code ({type(exc).__name__}); write plainer code")]


def summarise(findings: list[Finding]) -> tuple[bool, str, str]:
    """(rejected, one-line reason, details): the reason names the first rejecting rule;
    details list every finding, one per line, so the LLM can fix them all at once."""
    ordered = _ordered(findings)
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


def _ordered(findings: list[Finding]) -> list[Finding]:
    unique: dict[tuple, Finding] = {}
    for finding in findings:
        unique.setdefault((finding.rule, finding.severity, finding.line, finding.message), finding)
    return sorted(unique.values(), key=lambda f: (f.severity != "reject", f.line or 0, f.rule))


__all__ = ["Finding", "KernelLanguage", "check_kernel_source", "check_python_candidate", "summarise"]
