"""Pull the candidate's source out of an LLM reply, whatever shape the reply takes.

Replies come with several fenced blocks, wrong or missing language tags, an unterminated
fence when the reply was cut at max_tokens, prose around the code, no fence at all, or a
reasoning model's <think> section. We pick the block that defines what the format needs
(the `kernel` function, or `class ModelNew`), and say why when there is none.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from actors.fingerprint import code_fingerprint as fingerprint
from actors.signature_shape import blank_comments
from npu_pool.verdict import CandidateFormat

_THINK = re.compile(r"<think>.*?(</think>|\Z)", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*([\w+#.\-]*)[^\n]*$", re.MULTILINE)
_KERNEL_DEF = re.compile(r"\b(?:void|int)\s+kernel\s*\([^;{]*\)\s*\{", re.DOTALL)
_KERNEL_OPEN = re.compile(r"\b(?:void|int)\s+kernel\s*\(")
_MODELNEW_DEF = re.compile(r"^\s*class\s+ModelNew\b", re.MULTILINE)
_C_CODE_START = re.compile(r"^\s*(#include|#define|#pragma|extern\s+\"C\"|static\b|inline\b|template\b|"
                           r"typedef\b|struct\b|using\b|namespace\b|(?:const\s+)?(?:void|int|float|double|"
                           r"int64_t|size_t|auto)\b)")
_PY_CODE_START = re.compile(r"^(import\s|from\s+\S+\s+import\s|class\s|def\s|@|[A-Za-z_]\w*\s*=)")


@dataclass(frozen=True)
class Extraction:
    """The code found (or None) and, when none was usable, why."""

    code: str | None
    reason: str | None = None
    unterminated: bool = False


def defines_entry_point(code: str, fmt: CandidateFormat) -> bool:
    if fmt == "kernel":  # comments blanked: a parameter's comment may sit between `)` and `{`
        return bool(_KERNEL_DEF.search(blank_comments(code)))
    return bool(_MODELNEW_DEF.search(code))


def extract_code(reply: str, fmt: CandidateFormat) -> Extraction:
    """The candidate source in `reply` for format `fmt` (a `kernel` C function or a ModelNew file)."""
    text = _THINK.sub("", reply or "").strip()
    if not text:
        return Extraction(None, "empty reply")
    blocks, unterminated = _fenced_blocks(text)
    defining = [b for b in blocks if defines_entry_point(b, fmt)]
    if defining:
        # Several candidates: the last one is the model's final answer.
        chosen = defining[-1]
        if unterminated and chosen is blocks[-1] and not _complete(chosen, fmt):
            return Extraction(None, "the reply was cut off inside the code", True)
        return Extraction(chosen.strip() + "\n", None, unterminated)
    bare = _unfenced_code(text, fmt) if not blocks else None
    if bare:
        return Extraction(bare, None)
    what = "a `kernel` function" if fmt == "kernel" else "`class ModelNew`"
    if fmt == "kernel" and _unclosed_entry(blocks or [text]):
        return Extraction(None, UNCLOSED_ENTRY, unterminated)
    if blocks:
        hint = " (the reply was cut off inside the code)" if unterminated else ""
        return Extraction(None, f"no code block defines {what}{hint}", unterminated)
    return Extraction(None, f"no code in the reply (expected {what})")


UNCLOSED_ENTRY = ("the `kernel` function's parameter list is not closed: its body's `{` comes before the `)` "
                  "(write the entry line exactly as given, `)` included)")


def _unclosed_entry(blocks: list[str]) -> bool:
    """Whether code opens the `kernel` function's body before closing its parameter list: a small
    model copying the brief's one-parameter-a-line signature drops the line holding `);`."""
    for block in blocks:
        code = blank_comments(block)  # the parameters' comments hold parentheses: "(now 32x128)"
        for opening in _KERNEL_OPEN.finditer(code):
            rest = code[opening.end():]
            brace, paren = rest.find("{"), rest.find(")")
            if brace >= 0 and (paren < 0 or brace < paren):
                return True
    return False


def _complete(code: str, fmt: CandidateFormat) -> bool:
    """Whether code from an unterminated fence still holds a whole entry point."""
    if fmt == "kernel":
        match = _KERNEL_DEF.search(blank_comments(code))
        return match is not None and _matching_brace(code, match.end() - 1) is not None
    try:
        ast.parse(code)
    except SyntaxError:
        return False
    return True


def _fenced_blocks(text: str) -> tuple[list[str], bool]:
    """Contents of every fenced block; an opening fence with no closing one runs to the end."""
    blocks: list[str] = []
    position = 0
    while True:
        opening = _FENCE.search(text, position)
        if opening is None:
            return blocks, False
        fence = opening.group(1)
        closing = re.compile(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$", re.MULTILINE)
        end = closing.search(text, opening.end())
        if end is None:
            blocks.append(text[opening.end():].strip("\n"))
            return blocks, True
        blocks.append(text[opening.end():end.start()].strip("\n"))
        position = end.end()


def _unfenced_code(text: str, fmt: CandidateFormat) -> str | None:
    """Code written without fences: from the first code-looking line to the entry point's end."""
    if not defines_entry_point(text, fmt):
        return None
    lines = text.splitlines()
    starts = _C_CODE_START if fmt == "kernel" else _PY_CODE_START
    first = next((i for i, line in enumerate(lines) if starts.match(line)), None)
    if first is None:
        return None
    body = "\n".join(lines[first:])
    if fmt == "kernel":
        match = _KERNEL_DEF.search(blank_comments(body))  # positions kept: they index `body`
        if match is None:
            return None
        end = _matching_brace(body, match.end() - 1)
        return body[: end + 1].strip() + "\n" if end is not None else None
    # Python: drop trailing prose (non-indented lines that do not look like code).
    kept = body.splitlines()
    while kept and kept[-1].strip() and not kept[-1].startswith((" ", "\t")) and not _PY_CODE_START.match(kept[-1]):
        kept.pop()
    return "\n".join(kept).strip() + "\n"


def _matching_brace(source: str, open_index: int) -> int | None:
    """Index of the brace closing the one at `open_index`, skipping strings and comments."""
    depth = 0
    i = open_index
    while i < len(source):
        ch = source[i]
        if source.startswith("//", i):
            i = source.find("\n", i)
            if i < 0:
                return None
            continue
        if source.startswith("/*", i):
            i = source.find("*/", i + 2)
            if i < 0:
                return None
            i += 2
            continue
        if ch in "\"'":
            i += 1
            while i < len(source) and source[i] != ch:
                i += 2 if source[i] == "\\" else 1
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return None


def code_fingerprint(code: str) -> str:
    """Identity of a candidate up to comments, white space and its own names: how the episode
    spots a repeated attempt (actors/fingerprint.py)."""
    return fingerprint(code)
