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

Modules: `findings` (`Finding`, `summarise`; what every checker imports), `python` (a
ModelNew file), `module_rules` (rules that hold anywhere in the file), `program` (its
functions, classes and entry points), `forward`, `exprs` and `calls` (the forward-path
analysis), `values` (its abstract values), `torch_names` (the name tables), `source`
(C/C++/CUDA/Ascend C) and `tensor_operators` (its torch::Tensor operator rule).

May import: nothing of ours outside npu_pool.antihack.
"""

from __future__ import annotations

from npu_pool.antihack.findings import Finding, KernelLanguage, ordered_findings, summarise
from npu_pool.antihack.python import check_python
from npu_pool.antihack.source import check_source

MAX_SOURCE_CHARS = 400_000  # far beyond any kernel; bounds the checker's own work


def check_python_candidate(source: str) -> list[Finding]:
    """All findings for a `ModelNew` file, rejects first, then by line."""
    return _guarded(check_python, source)


def check_kernel_source(source: str, language: KernelLanguage) -> list[Finding]:
    """All findings for one kernel-format source in `language`, rejects first."""
    if language not in ("c", "cpp", "cuda", "ascendc"):
        raise ValueError(f"unknown kernel language {language!r}; expected c, cpp, cuda or ascendc")
    return _guarded(check_source, source, language)


def _guarded(check, source: str, *args) -> list[Finding]:
    """Run a checker; a file it cannot analyse is rejected, never waved through."""
    if len(source) > MAX_SOURCE_CHARS:
        return [Finding(rule="too_large", severity="reject", message=f"the candidate has {len(source)} characters; keep it under {MAX_SOURCE_CHARS}")]
    try:
        return ordered_findings(check(source, *args))
    except RecursionError:
        return [Finding(rule="too_complex", severity="reject", message="the code is nested too deeply to check; write flatter code")]
    except Exception as exc:  # a checker bug must not let a candidate through unchecked
        import structlog

        structlog.get_logger("npu_pool.antihack").warning("antihack_internal_error", error=f"{type(exc).__name__}: {exc}")
        return [Finding(rule="unanalysable", severity="reject",
                        message=f"the anti-hack checker could not analyse this code ({type(exc).__name__}); write plainer code")]


__all__ = ["Finding", "KernelLanguage", "check_kernel_source", "check_python_candidate", "summarise"]
