"""The current kernel's formula carried into the ub_scalar rung mechanically (issue 65).

The 1.5B model copies the nearest whole kernel it is shown: shown the ub_scalar rung with "replace
its computation with this task's", it wrote the rung back with the rung's own formula (the
2026-12-06 rerun of the climb pilot; the probe before it: 6 of 6). A ub_scalar rung is built so
that the step is mechanical: its formula loop (`// the formula, element by element, on the tile in
UB`) holds the first rung's lines word for word, only reading and writing the tile instead of
global memory. So where the current kernel has the first rung's elementwise form (one loop over
the block's share that reads each input and writes the output at the loop's index through
`GlobalTensor` `GetValue`/`SetValue`), its loop body goes into the rung's formula loop, the
accesses redirected to the tiles the rung copies those tensors into, and the prompt shows the
result: a kernel of the task itself, in the faster form, which the model only has to copy.

Anything else (a row reduction's accumulator, another index than the loop's, a name the rung
does not declare and the kernel declares from other locals) is not merged: the rung is then shown
as before, with the formula beside it. Never compiled here: the refinement that copies it goes
through every gate like any other.
"""

from __future__ import annotations

import re
import textwrap

FORMULA_LOOP = re.compile(r"^(?P<indent>[ \t]*)for \(int64_t (?P<var>\w+) = 0; (?P=var) < \w+; \+\+(?P=var)\) \{"
                          r"[ \t]*// the formula, element by element, on the tile in UB[^\n]*\n", re.MULTILINE)
START_LOOP = re.compile(r"^[ \t]*for \((?:const )?(?:int64_t|int32_t|uint32_t|int|size_t|uint64_t|long) (?P<var>\w+) = "
                         r"[^;]+;[^;]+;[^)]+\)\s*\{[ \t]*(?://[^\n]*)?\n", re.MULTILINE)
_ACCESS = re.compile(r"\b(?P<tensor>\w+)\s*\.\s*(?P<op>GetValue|SetValue)\s*\(\s*(?P<index>[^,()]+?)\s*(?P<end>[,)])")
_DECLARED = re.compile(r"\b(?:const\s+)?(?:float|double|int|int32_t|int64_t|uint32_t|uint64_t|auto|half|bool)\s+"
                       r"(?P<names>\w+\s*=[^;]*(?:,\s*\w+\s*=[^;]*)*);")
WORD = re.compile(r"\b[A-Za-z_]\w*\b")
_TYPES = {"float", "double", "int", "int32_t", "int64_t", "uint32_t", "uint64_t", "half", "static_cast", "f"}


def block_end(code: str, start: int) -> int:
    """The index just past the `}` closing the block whose `{` ends the line before `start`."""
    depth = 1
    for i in range(start, len(code)):
        if code[i] == "{":
            depth += 1
        elif code[i] == "}":
            depth -= 1
            if depth == 0:
                return i
    return -1


def _declared(code: str) -> set[str]:
    names: set[str] = set()
    for match in _DECLARED.finditer(code):
        for part in match.group("names").split(","):
            names.add(part.split("=")[0].strip())
    return names


def _tiles(rung: str) -> tuple[dict[str, str], str | None]:
    """The rung's copies: input GlobalTensor -> the tile it is copied into; the tile copied out."""
    ins = {gm: tile for tile, gm in re.findall(r"DataCopyPad\(\s*(\w+)\s*,\s*(\w+)\[", rung)}
    outs = re.findall(r"DataCopyPad\(\s*(\w+)\[[^\]]*\]\s*,\s*(\w+)\s*,", rung)
    return ins, (outs[0][1] if len(outs) == 1 else None)


def _elementwise_loop(start: str) -> tuple[str, str] | None:
    """The start kernel's loop over its share whose body reads and writes at the loop's index:
    (its variable, its body); None where there is not exactly one such loop."""
    found = []
    for loop in START_LOOP.finditer(start):
        end = block_end(start, loop.end())
        body = start[loop.end():end] if end > 0 else ""
        if re.search(r"\bfor\s*\(", body):
            continue
        accesses = list(_ACCESS.finditer(body))
        if any(a.group("op") == "SetValue" for a in accesses):
            found.append((loop.group("var"), body, accesses))
    if len(found) != 1:
        return None
    var, body, accesses = found[0]
    globals_ = {name.strip() for group in re.findall(r"GlobalTensor<\w+>\s+([^;]+);", start) for name in group.split(",")}
    if not all(a.group("index") == var and a.group("tensor") in globals_ for a in accesses):
        return None  # global memory read and written at the loop's element only
    if re.search(rf"\b{var}\b", _ACCESS.sub("", body)):
        return None  # the index used in the formula itself: a tile's index is not the element's
    return var, body


# The row reduction's ub_scalar rung (ex2 in the task's names): its accumulator's start, the row's result
_ROW_INIT = re.compile(r"^(?P<indent>[ \t]*)float sum = 0\.0f;\n", re.MULTILINE)
_ROW_RESULT = re.compile(r"^(?P<indent>[ \t]*)res\.SetValue\(r - r0, [^\n]*\);[^\n]*\n", re.MULTILINE)


def _row_loops(start: str) -> tuple[list[str], list[str], str] | None:
    """The start kernel's row loop in the first rung's row form: (the lines that start the row's
    accumulators, the inner loop's lines with x read at the row's element, the row's result
    expression), its variables renamed to the rung's `r` and `c`; None otherwise."""
    bodies = [(m, start[m.end():block_end(start, m.end())]) for m in START_LOOP.finditer(start)]
    outer = [(m, body) for m, body in bodies if re.search(r"\bfor\s*\(", body)]
    if len(outer) != 1:
        return None
    body = outer[0][1]
    inner = START_LOOP.search(body)
    if inner is None or START_LOOP.search(body, inner.end()) is not None:
        return None
    inner_end = block_end(body, inner.end())
    head, update, tail = body[:inner.start()], body[inner.end():inner_end], body[inner_end + 1:]
    r, c = outer[0][0].group("var"), inner.group("var")
    reads = list(_ACCESS.finditer(update))
    result = re.fullmatch(r"\s*(\w+)\s*\.\s*SetValue\(\s*" + r + r"\s*,\s*(.+)\);\s*(//[^\n]*)?\s*", tail, re.S)
    if (result is None or _ACCESS.search(head) or _ACCESS.search(result.group(2)) or not reads
            or not all(a.group("op") == "GetValue" and re.sub(r"\s", "", a.group("index")) == f"{r}*cols+{c}"
                       for a in reads) or re.search(rf"\b{c}\b", result.group(2))):
        return None

    def ours(text: str) -> str:  # the rung's names for the row and the column
        return re.sub(rf"\b{c}\b", "c", re.sub(rf"\b{r}\b", "r", text)) if (r, c) != ("r", "c") else text

    update = _ACCESS.sub(lambda a: "tile.GetValue(c)", update)
    lines = [ours(line.split("//")[0].strip()) for line in head.splitlines() if line.split("//")[0].strip()]
    updates = [ours(line.split("//")[0].strip()) for line in update.splitlines() if line.split("//")[0].strip()]
    return lines, updates, ours(result.group(2).strip())


def _merged_rows(rung: str, start: str) -> str | None:
    init, result, formula = _ROW_INIT.search(rung), _ROW_RESULT.search(rung), FORMULA_LOOP.search(rung)
    rows = _row_loops(start)
    if init is None or result is None or formula is None or formula.group("var") != "c" or rows is None:
        return None
    head, update, value = rows
    end = block_end(rung, formula.end())
    kept = rung[:init.start()] + rung[init.end():formula.end()] + rung[end:result.start()] + rung[result.end():]
    if _declared("\n".join(head + update)) & set(WORD.findall(kept)) - {"r", "c"}:
        return None  # an accumulator named like one of the rung's own locals
    indent, inner = init.group("indent"), formula.group("indent") + "    "
    return (rung[:init.start()] + "".join(f"{indent}{line}\n" for line in head) + rung[init.end():formula.end()]
            + "".join(f"{inner}{line}\n" for line in update) + formula.group("indent") + rung[end:result.start()]
            + f"{result.group('indent')}res.SetValue(r - r0, {value});  // the row's result\n" + rung[result.end():])


def merged_rung(rung: str, start: str) -> str | None:
    """The ub_scalar rung (already in the task's names) with the start kernel's computation in it:
    an elementwise loop body as its formula, or a row reduction's accumulator lines; None where the
    start kernel is not of those forms or a name would dangle."""
    if _ROW_INIT.search(rung) and _ROW_RESULT.search(rung):
        return _merged_rows(rung, start)
    formula = FORMULA_LOOP.search(rung)
    loop = _elementwise_loop(start)
    ins, out_tile = _tiles(rung)
    if formula is None or loop is None or out_tile is None:
        return None
    var, body = loop
    end = block_end(rung, formula.end())
    if end < 0:
        return None
    outputs = {a.group("tensor") for a in _ACCESS.finditer(body) if a.group("op") == "SetValue"}
    if len(outputs) != 1:
        return None

    def redirect(access: re.Match[str]) -> str:
        tensor = access.group("tensor")
        tile = out_tile if tensor in outputs else ins.get(tensor)
        if tile is None:
            raise KeyError(tensor)
        return f"{tile}.{access.group('op')}({formula.group('var')}{access.group('end')}"

    try:
        lines = _ACCESS.sub(redirect, textwrap.dedent(body).strip("\n"))
    except KeyError:  # a tensor the rung does not copy in
        return None
    outside = rung[:formula.start()] + rung[end:]
    if _declared(lines) & set(WORD.findall(outside)):
        return None  # a local of the formula would hide one of the rung's (its tile, its count)
    carried = carried_scalars(start, body, lines, rung)
    if carried is None:
        return None
    inner = formula.group("indent") + "    "
    merged = rung[:formula.end()] + textwrap.indent(lines, inner) + "\n" + formula.group("indent") + rung[end:]
    return with_scalars(merged, carried)


def carried_scalars(start: str, body: str, uses: str, rung: str) -> list[str] | None:
    """The start kernel's declarations outside its loop `body` of names that `uses` (the formula as
    it goes into the rung) reads and the rung lacks: a constructor scalar read from the tiling.
    None where one is computed from the kernel's other locals (it cannot be carried alone)."""
    known = _declared(rung) | set(WORD.findall(rung))
    carried = []
    for line in (text.split("//")[0].rstrip() for text in start.splitlines()):
        declared = _declared(line)
        if not declared or line in body or not declared & set(WORD.findall(uses)) or declared <= known:
            continue
        value = re.sub(r"\bt\s*\.\s*\w+", "", line.split("=", 1)[1])  # the tiling's fields are the rung's too
        if set(WORD.findall(value)) - _TYPES:
            return None
        carried.append(line.strip())
        known |= declared
    return carried


def with_scalars(code: str, carried: list[str]) -> str | None:
    """`code` with the carried declarations just after its tiling is read; None without that line."""
    if not carried:
        return code
    anchor = re.search(r"^([ \t]*)CopyTiling\(&t, tiling\);[^\n]*\n", code, re.MULTILINE)
    if anchor is None:
        return None
    return code[:anchor.end()] + "".join(f"{anchor.group(1)}{c}\n" for c in carried) + code[anchor.end():]
