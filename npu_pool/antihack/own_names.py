"""Whether a C/C++ program declares a name itself, and where a name is taken as a value.

Libc functions under common words (`open`, `read`, `write`, `truncate`, `wait`, `clock`, `time`)
are also the names of kernels' own variables and helpers, so the static gate rejects them as
calls only. Taken as a value (`int (*f)(const char*, int, ...) = open;`, `run(&read)`), such a
word is libc's function unless the program declares the name itself: in valid C/C++ an
undeclared name comes from a header, and for these words the headers hold the functions. A
prototype (`extern "C" int open(const char*, int, ...);`) declares libc's function, not the
program's own, so only variables, parameters, members, enumerators and function definitions
(with a body) count. Reading errs towards "declared": a miss lets the sandbox stop the kernel,
a false finding would reject a legitimate one.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

# Words that precede a name without declaring it (`return open;`, `case time:`).
_NOT_A_TYPE = {"return", "case", "goto", "throw", "sizeof", "alignof", "decltype", "else", "do", "new",
               "delete", "co_return", "co_yield", "co_await", "typeid", "noexcept", "static_assert"}
# Words that only a parameter list holds (a prototype's, not a constructor's arguments).
_TYPE_WORDS = {"void", "char", "short", "int", "long", "float", "double", "signed", "unsigned", "bool", "const",
               "volatile", "struct", "size_t", "ssize_t", "off_t", "mode_t", "pid_t", "clock_t", "time_t"}
# What may stand between a function's parameters and its body.
_AFTER_PARAMETERS = re.compile(r"\s*(?:(?:const|volatile|noexcept|override|final|mutable|__\w+__)\b\s*"
                               r"|->\s*[\w:<>,\s*&]+?(?=\{)|__attribute__\s*\(\(.*?\)\)\s*)*\{", re.S)


def declares(code: str, name: str) -> bool:
    """Whether CODE (comments and strings blanked) declares NAME as its own."""
    if re.search(r"\benum\b[^{;]*\{[^}]*\b" + re.escape(name) + r"\b", code):
        return True  # an enumerator
    declarator = re.compile(r"(?P<before>[A-Za-z_]\w*|>)\s*(?:[*&]\s*)*(?<![\w.])" + re.escape(name)
                            + r"\s*(?P<after>[=;,)\[{:>]|\()")
    for match in declarator.finditer(code):
        if match.group("before") in _NOT_A_TYPE:
            continue
        if match.group("after") != "(":
            return True  # a variable, parameter, member or template parameter
        if _has_body(code, match.end() - 1):
            return True  # the program's own function (a prototype alone declares libc's)
        if _constructed(code, match.end() - 1):
            return True  # `Reader read(src, n);`: a variable built by a constructor
    return False


def taken_as_value(code: str, names: set[str]) -> Iterator[re.Match[str]]:
    """Places where one of NAMES stands as a value (`= open;`, `&read`, `f(write)`, `return time;`);
    group `name` the name, `qualified` its `std::` or `::` (never the program's own)."""
    if not names:
        return
    alternatives = "|".join(map(re.escape, sorted(names)))
    value = re.compile(r"(?:[=&(,?:]\s*|\breturn\s+)(?P<qualified>std\s*::\s*|::\s*)?(?<![\w.>])(?P<name>" + alternatives
                       + r")\s*(?:[;,}:]|\)(?!\s*\())")  # `(open)(` is a call or a declarator: the call rules' cases
    yield from value.finditer(code)


def _has_body(code: str, open_paren: int) -> bool:
    close = _matching(code, open_paren)
    return close is not None and bool(_AFTER_PARAMETERS.match(code, close + 1))


def _constructed(code: str, open_paren: int) -> bool:
    """`Reader read(src, n);` builds a variable; `int read(int, void*, size_t);` (types, pointers to
    them, `...` or nothing between the parentheses) is a prototype."""
    close = _matching(code, open_paren)
    if close is None or not re.match(r"\s*[;,]", code[close + 1:]):
        return False
    arguments = code[open_paren + 1:close]
    return bool(arguments.strip()) and "..." not in arguments and not re.search(r"[*&]\s*(?:,|$)", arguments) \
        and not set(re.findall(r"[A-Za-z_]\w*", arguments)) & _TYPE_WORDS


def _matching(code: str, open_paren: int) -> int | None:
    depth = 0
    for i in range(open_paren, len(code)):
        depth += {"(": 1, ")": -1}.get(code[i], 0)
        if depth == 0:
            return i
    return None
