"""Lexing for the C-family anti-hack rules (npu_pool.antihack.source): backslash-newlines
spliced and `%:` digraphs read as `#` (the compiler's first translation phases, so a name split
over two lines or a `%:define` is seen as the compiler sees it); comments and string literals
blanked with their lengths kept, so a rule's match offset is still the source's own line;
identifier characters; the line of an offset."""

from __future__ import annotations

import re


def splice_lines(source: str) -> str:
    """Backslash-newlines removed as the compiler does before anything else (`op\\<newline>en(`
    is a call of `open`; a #define's continued body is one line); the removed newlines follow
    the joined line, so every later line keeps its number."""
    if "\\\n" not in source and "\\\r\n" not in source:
        return source
    lines: list[str] = []
    joined, pending = "", 0
    for line in source.split("\n"):
        body = line[:-1] if line.endswith("\r") else line
        if body.endswith("\\"):
            joined, pending = joined + body[:-1], pending + 1
            continue
        lines += [joined + line] + [""] * pending
        joined, pending = "", 0
    if pending:  # the file ends inside a continued line
        lines += [joined] + [""] * (pending - 1)
    return "\n".join(lines)


def read_digraphs(code: str) -> str:
    """`%:` is `#` and `%:%:` is `##` in C++ (digraphs): same length, so offsets stay."""
    return code.replace("%:%:", "##  ").replace("%:", "# ") if "%:" in code else code


def blank_comments_and_strings(source: str) -> tuple[str, str]:
    """(code without comments, code without comments nor string/char literal contents).

    Every removed character becomes a space (newlines are kept), so offsets and line
    numbers stay those of `source`.
    """
    no_comments: list[str] = []
    no_strings: list[str] = []
    i, n = 0, len(source)

    def keep(text: str, in_string: bool) -> None:
        no_comments.append(text)
        no_strings.append("".join(c if c == "\n" else " " for c in text) if in_string else text)

    def blank(text: str) -> None:
        spaces = "".join(c if c == "\n" else " " for c in text)
        no_comments.append(spaces)
        no_strings.append(spaces)

    while i < n:
        c = source[i]
        if source.startswith("//", i):
            end = source.find("\n", i)
            end = n if end < 0 else end
            blank(source[i:end])
            i = end
        elif source.startswith("/*", i):
            end = source.find("*/", i + 2)
            end = n if end < 0 else end + 2
            blank(source[i:end])
            i = end
        elif (raw := re.match(r'R"([^()\\\s]{0,16})\(', source[i:i + 20])) and (i == 0 or not _ident(source[i - 1])):
            closing = ")" + raw.group(1) + '"'
            end = source.find(closing, i + raw.end())
            end = n if end < 0 else end + len(closing)
            keep(source[i:i + 2], False)
            keep(source[i + 2:end - 1], True)
            keep(source[end - 1:end], False)
            i = end
        elif c in "\"'":
            j = i + 1
            while j < n and source[j] != c and source[j] != "\n":
                j += 2 if source[j] == "\\" else 1
            end = min(j + 1, n)
            keep(c, False)
            keep(source[i + 1:end - 1], True)
            keep(source[end - 1:end] if end - 1 > i else "", False)
            i = end
        else:
            j = i
            while j < n and source[j] not in "/\"'R":
                j += 1
            if j == i:
                j = i + 1
            keep(source[i:j], False)
            i = j
    return "".join(no_comments), "".join(no_strings)


def _ident(char: str) -> bool:
    return char.isalnum() or char == "_"


def _line(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1
