"""The vector rung with the current kernel's own formula lowered into it, by the system (issue 65).

The climb's pilots showed the 1.5B model copying the nearest whole kernel it is shown: the formula
carried into the ub_scalar rung (actors/climb_merge.py) took kernels from scalar access to tiles
in UB (median 151x on the twin), and no model-written refinement reached the vector unit. The step
from a tile's scalar loop to vector instructions is mechanical for the formulas the first rung
holds (a few arithmetic operations and math calls per element), so the system takes it: the start
kernel's elementwise loop (the first rung's form over global memory, or a ub_scalar formula loop
over a tile) is read into a tree (actors/formula_tree.py), lowered into vector instructions over
whole tiles (actors/formula_lowering.py), and written into the vector (or double-buffered) rung of
the task's family and shape, in place of the rung's own instructions, with scratch tiles for the
intermediate values. Tensors are matched through the kernel arguments they are bound to.

Anything outside that subset returns None and the rung is shown to the model as before. Never
compiled here: the proposal goes through every gate like any other refinement.
"""

from __future__ import annotations

import re

from actors.climb_merge import START_LOOP, WORD, block_end, carried_scalars, with_scalars
from actors.formula_lowering import Lowering
from actors.formula_tree import Tree, Unsupported, names, read_formula

UB_BYTES = 192 * 1024  # the smallest Unified Buffer of the SoCs the twin models (the 910B's)
_GM_ARG = re.compile(r"\b(\w+)\s*\.\s*SetGlobalBuffer\(\s*\(\s*__gm__\s+float\s*\*\s*\)\s*(\w+)")
_COPY_IN = re.compile(r"\bDataCopy(?:Pad)?\(\s*(\w+)\s*,\s*(\w+)\s*\[")
_COPY_OUT = re.compile(r"\bDataCopy(?:Pad)?\(\s*(\w+)\s*\[[^\]]*\]\s*,\s*(\w+)\s*,")
_VECTOR_LINE = re.compile(r"^(?P<indent>[ \t]*)(?:Abs|Adds|Muls|Ln|Exp|Add|Sub|Mul|Div|Max|Min|Maxs|Mins|Sqrt|Rsqrt"
                          r"|Reciprocal|Relu|LeakyRelu|Duplicate)\((?P<args>[^\n]*)\);[^\n]*\n", re.MULTILINE)
_TILE = re.compile(r"constexpr\s+int64_t\s+TILE\s*=\s*(\d+)")
_BUFFERS = re.compile(r"pipe\.InitBuffer\(\s*\w+\s*,\s*(?:(\d+)\s*,\s*)?TILE\s*\*\s*sizeof\(float\)\s*\)")


def _arguments(code: str) -> dict[str, str]:
    """Each float GlobalTensor -> the kernel argument it is bound to."""
    return dict(_GM_ARG.findall(code))


def scalar_formula(start: str) -> tuple[str, str, Tree] | None:
    """The start kernel's one elementwise loop (no loop inside it, one SetValue at its index): its
    body, the kernel argument it writes and the tree of what it writes, each input read named by
    the kernel argument it comes from (through a tile copied in from it, or directly)."""
    found = []
    for loop in START_LOOP.finditer(start):
        end = block_end(start, loop.end())
        body = start[loop.end():end] if end > 0 else ""
        if "SetValue" in body and not re.search(r"\bfor\s*\(", body):
            found.append((loop.group("var"), body))
    if len(found) != 1:
        return None
    index, body = found[0]
    try:
        out, tree = read_formula(body, index)
    except Unsupported:
        return None
    args = _arguments(start)
    reads = {**{tile: args.get(gm) for tile, gm in _COPY_IN.findall(start)}, **args}
    writes = {**{tile: args.get(gm) for gm, tile in _COPY_OUT.findall(start)}, **args}
    try:
        tree = _renamed(tree, reads)
    except KeyError:
        return None
    return (body, writes[out], tree) if writes.get(out) else None


def _renamed(tree: Tree, reads: dict[str, str | None]) -> Tree:
    if tree[0] == "in":
        if not reads.get(tree[1]):
            raise KeyError(tree[1])
        return ("in", reads[tree[1]])
    return (tree[0], *(_renamed(p, reads) if isinstance(p, tuple) else p for p in tree[1:]))


def _compute_lines(rung: str) -> list[re.Match[str]] | None:
    """The rung's one run of consecutive vector instruction lines (its own formula)."""
    runs: list[list[re.Match[str]]] = []
    for match in _VECTOR_LINE.finditer(rung):
        if runs and runs[-1][-1].end() == match.start():
            runs[-1].append(match)
        else:
            runs.append([match])
    return runs[0] if len(runs) == 1 else None


def vectorized_rung(rung: str, start: str) -> str | None:
    """The vector (or double-buffered) rung, already in the task's names, computing the start
    kernel's elementwise formula with vector instructions: the formula of a scalar start kernel
    lowered, or a single-buffered vector start kernel's own instructions moved into the rung's
    tiles (the step to double buffering); None where the start kernel or the rung is not of the
    forms read here, or the scratch tiles would not fit in UB."""
    lines = _compute_lines(rung)
    if lines is None:
        return None
    gm_of = {arg: gm for gm, arg in _arguments(rung).items()}
    ins = {gm: tile for tile, gm in _COPY_IN.findall(rung)}
    outs = {gm: tile for gm, tile in _COPY_OUT.findall(rung)}
    in_tiles = {arg: ins[gm] for arg, gm in gm_of.items() if gm in ins}
    out_tiles = {arg: outs[gm] for arg, gm in gm_of.items() if gm in outs}
    count = lines[0].group("args").rsplit(",", 1)[-1].strip()
    made = (_lowered(start, in_tiles, out_tiles, count)
            or (_moved(start, in_tiles, out_tiles, count) if "TQue" in rung else None))  # only up to double buffering
    if made is None:
        return None
    generated, scratch, body, uses = made
    words = set(WORD.findall(rung))
    prefix = next(p for p in ("scratch", "formulaTmp", "evkScratch") if not any(w.startswith(p) for w in words))
    renamed = {name: f"{prefix}{i}" for i, name in enumerate(scratch)}
    if not fits_in_ub(rung, len(renamed)):
        return None
    carried = carried_scalars(start, body, uses, rung)
    if carried is None:
        return None
    indent = lines[0].group("indent")
    code = "".join(indent + re.sub(r"\b\w+\b", lambda m: renamed.get(m.group(0), m.group(0)), line) + "\n"
                   for line in generated)
    code = rung[:lines[0].start()] + code + rung[lines[-1].end():]
    loop = re.search(r"^(?P<indent>[ \t]*)for \(", code, re.MULTILINE)
    if loop is None:
        return None
    declared = tile_declarations(loop.group("indent"), list(renamed.values()), "TILE", "an intermediate value of the formula")
    return with_scalars(code[:loop.start()] + declared + code[loop.start():], carried)


def fits_in_ub(rung: str, scratch_tiles: int) -> bool:
    """Whether the rung's TILE-sized buffers and `scratch_tiles` more fit the smallest UB modelled."""
    tile = _TILE.search(rung)
    buffers = sum(int(n or 1) for n in _BUFFERS.findall(rung)) + scratch_tiles
    return tile is not None and buffers * int(tile.group(1)) * 4 <= UB_BYTES


def tile_declarations(pad: str, names: list[str], size: str, why: str) -> str:
    """A TBuf, its buffer of `size` floats and its LocalTensor for each name, before the tile loop."""
    return "".join(f"{pad}TBuf<TPosition::VECCALC> {name}Buf;  // {why}\n"
                   f"{pad}pipe.InitBuffer({name}Buf, {size} * sizeof(float));\n"
                   f"{pad}LocalTensor<float> {name} = {name}Buf.Get<float>();\n" for name in names)


def _lowered(start: str, in_tiles: dict[str, str], out_tiles: dict[str, str],
             count: str) -> tuple[list[str], list[str], str, str] | None:
    """A scalar start kernel's formula lowered: (instruction lines, scratch tiles, the loop body,
    the scalars it reads)."""
    formula = scalar_formula(start)
    if formula is None or formula[1] not in out_tiles:
        return None
    body, out_arg, tree = formula
    lowering = Lowering(count=count, leaf_tiles=in_tiles)
    try:
        generated = lowering.lower(tree, out_tiles[out_arg])
    except (Unsupported, KeyError):
        return None
    return generated, lowering.scratch, body, " ".join(sorted(names(tree)))


def _moved(start: str, in_tiles: dict[str, str], out_tiles: dict[str, str],
           count: str) -> tuple[list[str], list[str], str, str] | None:
    """A single-buffered vector start kernel's run of instructions, its tiles renamed to the rung's
    (an input tile read before the run overwrites it is the input, after it the output); its
    other tiles only the system's own scratch tiles."""
    run = _compute_lines(start)
    args = _arguments(start)
    reads = {tile: args.get(gm) for tile, gm in _COPY_IN.findall(start)}
    writes = {tile: args.get(gm) for gm, tile in _COPY_OUT.findall(start)}
    if run is None or len(writes) != 1 or None in reads.values() or "TQue" in start:
        return None
    (out_name, out_arg), = writes.items()
    locals_ = {n.split("=")[0].strip() for group in re.findall(r"LocalTensor<\w+>\s+([^;]+);", start)
               for n in group.split(",")}
    written: set[str] = set()
    lines, scratch, uses = [], [], set()

    def ours(name: str, is_dst: bool) -> str:
        if re.fullmatch(r"scratch\d+", name):
            scratch.append(name) if name not in scratch else None
            return name
        if name == out_name and (is_dst or name in written):
            return out_tiles[out_arg]
        if name in reads and name not in written:
            return in_tiles[reads[name]]
        if name in locals_ or name in written:
            raise KeyError(name)  # a tile of the kernel's own the rung does not have
        uses.update(WORD.findall(name))
        return name

    for match in run:
        op = match.group(0).strip().split("(", 1)[0]
        parts = [a.strip() for a in match.group("args").split(",")]
        note = match.group(0).split(";", 1)[1].strip()
        try:
            dst, sources = ours(parts[0], True), [ours(a, False) for a in parts[1:-1]]
        except KeyError:
            return None
        written.add(parts[0])
        lines.append(f"{op}({', '.join([dst, *sources, count])});" + (f"  {note}" if note else ""))
    return lines, scratch, "".join(m.group(0) for m in run), " ".join(sorted(uses))
