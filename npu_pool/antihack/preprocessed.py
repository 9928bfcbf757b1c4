"""A second look at a C/C++ source after its own macros are expanded (issue 45.9).

`#define CAT(a, b) a ## b` then `CAT(fo, rk)()` calls `fork` without the name ever being
written, and `#define ARGS (p, 0)` then `open ARGS;`, or `#define CALL(f, a) f a` then
`CALL(open, (p, 0))`, call `open` without a call ever being written: the token rules read
the source as written and cannot see them. A macro hides a name or a call only by pasting
tokens (`##`), by being function-like, or by holding a parenthesis (a plain `#define F fork`
still holds the name, and the token rules read #define bodies), so such a source is expanded
by the compiler's own preprocessor and the token rules run again on what comes out, each
finding at the line of the source it came from (the preprocessor's line markers).

What is expanded: the source with its `#include` and `#error` lines left out (headers would
bury the kernel in declarations of the very names the rules forbid; an `#error` meant for
another compiler would stop the expansion), with the compiler's predefined macros and include
search path (`__has_include` answers as in the build). CUDA sources are expanded twice, as
nvcc's host and device passes see them (`__CUDACC__`, and `__CUDA_ARCH__` too). A conditional
on a macro that only a header defines takes the other branch here than in the build.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Callable

from npu_pool.antihack.findings import Finding
from npu_pool.antihack.lexing import _line

_LEFT_OUT = re.compile(r'^[ \t]*#[ \t]*(?:include|error)\b.*$', re.MULTILINE)
_MARKER = re.compile(r'^#\s+(\d+)\s+"((?:[^"\\]|\\.)*)"')
_HIDING_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+\w+(?:\(|[^\n]*[()])", re.MULTILINE)
_CUDA_PASSES = (["-D__CUDACC__"], ["-D__CUDACC__", "-D__CUDA_ARCH__=800"])
TIMEOUT_S = 10


def needs_expansion(code: str) -> tuple[str, int] | None:
    """(rule, offset) of the first macro that could hide a name or a call (`##`, a function-like
    macro, a parenthesis in a macro's body), or None when expanding would show nothing new."""
    starts = [(code.index("##"), "token_pasting")] if "##" in code else []
    if hiding := _HIDING_DEFINE.search(code):
        starts.append((hiding.start(), "macro"))
    return (min(starts)[1], min(starts)[0]) if starts else None


def expanded(source_without_comments: str, defines: list[str] | None = None) -> tuple[str, list[int]] | None:
    """(the source with its own macros expanded, the source line of each expanded line), or
    None when no preprocessor is installed or it refuses the source."""
    compiler = shutil.which("g++") or shutil.which("cpp") or shutil.which("clang++")
    if compiler is None:
        return None
    text = _LEFT_OUT.sub("", source_without_comments)
    command = [compiler, *([] if compiler.endswith("/cpp") else ["-E"]), "-x", "c++", *(defines or []), "-"]
    try:
        done = subprocess.run(command, input=text, capture_output=True, text=True, timeout=TIMEOUT_S)
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    lines, origins, current, number = [], [], "<stdin>", 1
    for line in done.stdout.split("\n"):
        if marker := _MARKER.match(line):
            number, current = int(marker.group(1)), marker.group(2)
            continue
        if current == "<stdin>":  # not the predefined macros' own files
            lines.append(line)
            origins.append(number)
        number += 1
    return "\n".join(lines), origins


def check_expanded(no_comments: str, language: str, found: list[Finding], trigger: tuple[str, int],
                   rescan: Callable[[str], list[Finding]]) -> list[Finding]:
    """The token rules' rejections (`rescan`, the source module's token rules) in the expanded
    source that the source as written did not show (`found`); a source that cannot be expanded
    is rejected at the macro that asked for it (`trigger`: rule and offset). The rules come in
    as an argument so that this module stays below antihack.source, which calls it."""
    seen = {(f.rule, f.message) for f in found}
    new: dict[tuple[str, str], Finding] = {}
    for defines in _CUDA_PASSES if language == "cuda" else ([],):
        result = expanded(no_comments, defines)
        if result is None:
            rule, offset = trigger
            what = "## in a macro" if rule == "token_pasting" else "a function-like macro or a parenthesis in a macro"
            return [Finding(rule=rule, severity="reject", line=_line(no_comments, offset),
                            message=f"{what}, and the source could not be preprocessed to check what it makes")]
        text, origins = result
        for finding in rescan(text):
            if finding.severity == "reject" and (finding.rule, finding.message) not in seen:
                line = origins[finding.line - 1] if finding.line and finding.line <= len(origins) else None
                new.setdefault((finding.rule, finding.message), Finding(
                    rule=finding.rule, severity="reject", line=line,
                    message=f"after the macros are expanded: {finding.message}"))
    return list(new.values())
