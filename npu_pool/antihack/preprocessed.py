"""A second look at a C/C++ source after its own macros are expanded (issue 45.9).

`#define CAT(a, b) a ## b` then `CAT(fo, rk)()` calls `fork` without the name ever being
written: the token rules read the source as written and cannot see it. Token pasting is the
only way the preprocessor makes a new name (a plain `#define F fork` still holds the name, and
the token rules read #define bodies), so a source with `##` is expanded by the compiler's own
preprocessor and the token rules run again on what comes out.

What is expanded: the source with its `#include` lines left out (headers would bury the
kernel in declarations of the very names the rules forbid), with the compiler's predefined
macros and include search path (`__has_include` answers as in the build). A conditional on a
macro that only a header defines takes the other branch here than in the build; the `##`
warning stays on such a source either way.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Callable

from npu_pool.antihack.findings import Finding

_INCLUDE_LINE = re.compile(r'^[ \t]*#[ \t]*include\b.*$', re.MULTILINE)
TIMEOUT_S = 10


def expanded(source_without_comments: str) -> str | None:
    """The source with its own macros expanded (includes left out), or None when no
    preprocessor is installed or it refuses the source."""
    compiler = shutil.which("g++") or shutil.which("cpp") or shutil.which("clang++")
    if compiler is None:
        return None
    text = _INCLUDE_LINE.sub("", source_without_comments)
    command = [compiler, "-E", "-P", "-x", "c++", "-"] if not compiler.endswith("/cpp") else [compiler, "-P", "-x", "c++", "-"]
    try:
        done = subprocess.run(command, input=text, capture_output=True, text=True, timeout=TIMEOUT_S)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def check_expanded(no_comments: str, found: list[Finding], line: int,
                   rescan: Callable[[str], list[Finding]]) -> list[Finding]:
    """The token rules' rejections (`rescan`, the source module's token rules) in the expanded
    source that the source as written did not show (`found`), at `line` (the first `##`); a
    source that cannot be expanded is rejected. The rules come in as an argument so that this
    module stays below antihack.source, which calls it."""
    text = expanded(no_comments)
    if text is None:
        return [Finding(rule="token_pasting", severity="reject", line=line,
                        message="## in a macro, and the source could not be preprocessed to check what it assembles")]
    seen = {(f.rule, f.message) for f in found}
    return [Finding(rule=f.rule, severity="reject", line=line, message=f"after the macros are expanded: {f.message}")
            for f in rescan(text)
            if f.severity == "reject" and (f.rule, f.message) not in seen]
