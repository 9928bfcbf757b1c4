"""A row reduction's formula lowered into the row family's vector rung, by the system (issue 65).

The first rung's row form is one loop over the block's rows holding one loop over the row's
columns: accumulators started before the column loop, updated in it from the row's elements
(`acc += f(x)`, `acc = max(acc, f(x))`, `if (f(x) > acc) acc = f(x)`, ...), the row's result
written after it from the accumulators. Each update is a sum, a maximum or a minimum of an
elementwise value: on the vector unit, that value over a whole tile (actors/formula_lowering.py),
then ReduceSum/ReduceMax/ReduceMin of the tile, folded into the accumulator on the scalar unit.
The row rung (ex2 in the task's names) has exactly those places: its accumulator's start, its
compute run ending in a ReduceSum, its fold, its row result; the start kernel's go into them,
its accumulators renamed where a rung name would be hidden. Anything else returns None.
"""

from __future__ import annotations

import re

from actors.climb_merge import (
    FORMULA_LOOP,
    START_LOOP,
    WORD,
    block_end,
    carried_scalars,
    with_scalars,
)
from actors.climb_vectorize import fits_in_ub, tile_declarations
from actors.formula_lowering import Lowering, normalized
from actors.formula_tree import Indexing, Tree, Unsupported, names, read_body

_FLOATS = re.compile(r"^(?:const\s+)?float\s+(?P<rest>.+)$")
_RUN = re.compile(r"(?:^[ \t]*(?:Abs|Adds|Muls|Ln|Exp|Sqrt|Mul|Max|Min|Maxs|Mins|Reciprocal)\([^\n]*\n)*"
                  r"^(?P<indent>[ \t]*)ReduceSum\((?P<dst>\w+),\s*(?P<src>\w+),\s*(?P<work>\w+),\s*(?P<count>[^\n]+?)\);[^\n]*\n",
                  re.MULTILINE)
_INIT = re.compile(r"^(?P<indent>[ \t]*)float (?P<acc>\w+) = 0\.0f;[^\n]*\n", re.MULTILINE)
_REDUCE = {"sum": "ReduceSum", "max": "ReduceMax", "min": "ReduceMin"}


def _row_form(start: str) -> tuple[str, str, frozenset[str], list[str], str, str] | None:
    """The start kernel's row loop: (the column loop's body, its read index text, the loop indices,
    the lines before the column loop, the row result's expression, the whole row loop's text);
    None otherwise. Two forms: the first rung's (`x[r * cols + c]` over global memory, the result
    written at `r`) and the ub_scalar rung's (the formula loop over a tile copied in tile by tile,
    the result gathered at `r - r0`)."""
    tiled = list(FORMULA_LOOP.finditer(start))
    if len(tiled) == 1:
        return _tiled_row_form(start, tiled[0])
    rows = []
    for loop in START_LOOP.finditer(start):
        body = start[loop.end():block_end(start, loop.end())]
        inner = START_LOOP.search(body)
        if inner is not None and START_LOOP.search(body, inner.end()) is None:
            rows.append((loop, body, inner))
    if len(rows) != 1:
        return None
    loop, body, inner = rows[0]
    r, c = loop.group("var"), inner.group("var")
    end = block_end(body, inner.end())
    result = re.fullmatch(r"\s*\w+\s*\.\s*SetValue\(\s*" + r + r"\s*,\s*(.+)\);\s*(?://[^\n]*)?\s*", body[end + 1:], re.S)
    if result is None:
        return None
    return body[inner.end():end], f"{r}*cols+{c}", frozenset({r, c}), _lines(body[:inner.start()]), result.group(1).strip(), body


def _tiled_row_form(start: str, formula: re.Match[str]) -> tuple[str, str, frozenset[str], list[str], str, str] | None:
    loops = [m for m in START_LOOP.finditer(start) if m.start() < formula.start()
             and block_end(start, m.end()) > formula.end()]
    if len(loops) < 2:
        return None
    row, tile = loops[-2], loops[-1]  # the row loop, and the loop over its tiles around the formula loop
    row_end, tile_end = block_end(start, row.end()), block_end(start, tile.end())
    r, c = row.group("var"), formula.group("var")
    result = re.fullmatch(r"\s*\w+\s*\.\s*SetValue\(\s*" + r + r"\s*-\s*\w+\s*,\s*(.+)\);\s*(?://[^\n]*)?\s*",
                          start[tile_end + 1:row_end], re.S)
    if result is None:
        return None
    inner = start[formula.end():block_end(start, formula.end())]
    return (inner, c, frozenset({r, c, tile.group("var")}), _lines(start[row.end():tile.start()]),
            result.group(1).strip(), start[row.end():row_end])


def _lines(text: str) -> list[str]:
    return [line.split("//")[0].strip() for line in text.splitlines() if line.split("//")[0].strip()]


def _fold(kind: str, acc: str, value: str) -> str:
    if kind == "sum":
        return f"{acc} += {value};"
    return f"{acc} = {acc} {'>' if kind == 'max' else '<'} {value} ? {acc} : {value};"


def _updates(assigned: dict[str, Tree]) -> list[tuple[str, str, Tree]] | None:
    """Each accumulator's update as (accumulator, sum|max|min, the elementwise value)."""
    found = []
    for acc, tree in assigned.items():
        tree, mine = normalized(tree), ("name", acc)
        kind = {("bin", "+"): "sum", ("call", "max"): "max", ("call", "min"): "min"}.get((tree[0], tree[1]))
        if kind is None or mine not in tree[2:] or len(tree) != 4:
            return None
        value = tree[3] if tree[2] == mine else tree[2]
        if names(value) & set(assigned):  # an update reading any accumulator is sequential (online softmax)
            return None
        found.append((acc, kind, value))
    return found


def vectorized_rows(rung: str, start: str) -> str | None:
    """The row vector rung, already in the task's names, computing the start kernel's row
    reduction; None where either is not of the forms read here."""
    form = _row_form(start)
    init, run = _INIT.search(rung), _RUN.search(rung)
    if form is None or init is None or run is None:
        return None
    inner, index, indices, head, result, row_loop = form
    acc = init.group("acc")
    fold_line = re.search(rf"^(?P<indent>[ \t]*){acc} \+= {run.group('dst')}\.GetValue\(0\);[^\n]*\n", rung, re.MULTILINE)
    row_result = re.search(rf"^(?P<indent>[ \t]*)res\.SetValue\(r - r0, [^\n]*{acc}[^\n]*\);[^\n]*\n", rung, re.MULTILINE)
    accumulators = {name for line in head if (floats := _FLOATS.match(line))
                    for name in re.findall(r"(?:^|,)\s*(\w+)\s*=", floats.group("rest"))}
    if fold_line is None or row_result is None or not accumulators or any("GetValue" in line for line in head):
        return None
    try:
        read = read_body(inner, Indexing(frozenset({index}), indices), frozenset(accumulators))
    except Unsupported:
        return None
    updates = _updates(read.assigned) if not read.writes and set(read.assigned) == accumulators else None
    if not updates or re.search(rf"\b({'|'.join(indices)})\b|GetValue|;", result):
        return None  # the row's result from its accumulators (and the kernel's scalars) only
    x_gm = re.findall(r"\b(\w+)\s*\.\s*GetValue\(", inner)
    tile = re.search(r"DataCopyPad\(\s*(\w+)\s*,\s*\w+\[", rung)
    if tile is None or len(set(x_gm)) != 1:
        return None
    words = set(WORD.findall(rung)) - {acc}
    if any(w.startswith("scratch") for w in words):
        return None
    rename = {a: (a if a not in words else f"{a}Acc") for a in accumulators}
    if any(new in words for new in rename.values()):
        return None

    def ours(text: str) -> str:
        return re.sub(r"\b\w+\b", lambda w: rename.get(w.group(0), w.group(0)), text)

    count, indent = run.group("count").strip(), run.group("indent")
    lines, folds, extra, scratch = [], [], [], 0
    for k, (name, kind, value) in enumerate(updates):
        target = run.group("dst") if k == 0 else f"{run.group('dst')}{k}"
        if k:
            extra.append(target)
        lowering = Lowering(count=count, leaf_tiles={x_gm[0]: tile.group(1)})
        try:
            source = lowering.into_scratch(value)
        except (Unsupported, KeyError):
            return None
        scratch = max(scratch, len(lowering.scratch))
        lines += lowering.lines + [f"{_REDUCE[kind]}({target}, {source}, {run.group('work')}, {count});"
                                   f"  // the tile's {kind} into {target}[0]"]
        folds.append(_fold(kind, ours(name), f"{target}.GetValue(0)"))
    uses = " ".join(sorted(set().union(*(names(v) for _, _, v in updates)))) + " " + result
    carried = carried_scalars(start, row_loop, uses, rung)
    if carried is None or not fits_in_ub(rung, scratch):
        return None
    code = (rung[:init.start()] + "".join(f"{init.group('indent')}{ours(line)}\n" for line in head)
            + rung[init.end():run.start()] + "".join(f"{indent}{line}\n" for line in lines)
            + rung[run.end():fold_line.start()] + "".join(f"{fold_line.group('indent')}{f}\n" for f in folds)
            + rung[fold_line.end():row_result.start()]
            + f"{row_result.group('indent')}res.SetValue(r - r0, {ours(result)});  // the row's result\n"
            + rung[row_result.end():])
    loop = re.search(r"^(?P<indent>[ \t]*)for \(", code, re.MULTILINE)
    if loop is None:
        return None
    pad = loop.group("indent")
    buffers = (tile_declarations(pad, extra, "SLICE", "another accumulator's tile result")
               + tile_declarations(pad, [f"scratch{i}" for i in range(scratch)], "TILE", "an intermediate value of the formula"))
    if any(t in words for t in extra):
        return None
    return with_scalars(code[:loop.start()] + buffers + code[loop.start():], carried)
