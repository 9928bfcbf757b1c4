"""An elementwise formula tree (actors/formula_tree.py) lowered into Ascend C vector instructions
over whole tiles (issue 65): the vector rung's computation, written by the system.

Every tensor-valued node becomes one short instruction sequence whose first instruction reads the
node's operands and whose later ones work on its destination in place (so a destination may be an
operand's buffer: the tile itself, or a scratch tile no later node reads). Scalar-valued nodes stay
C expressions, passed as the instructions' scalar argument. Ternaries are read only where they are
a maximum, a minimum, an absolute value or a leaky ReLU; powers only with a literal exponent.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from actors.formula_tree import Tree, Unsupported, inputs

_C_NAMES = {"exp": "expf", "log": "logf", "sqrt": "sqrtf", "tanh": "tanhf", "log1p": "log1pf",
            "expm1": "expm1f", "pow": "powf", "abs": "fabsf", "max": "fmaxf", "min": "fminf"}
_UNARY = {"exp": "Exp", "log": "Ln", "abs": "Abs", "sqrt": "Sqrt", "rsqrt": "Rsqrt", "recip": "Reciprocal"}


def _is_tensor(tree: Tree) -> bool:
    return bool(inputs(tree))


def scalar_text(tree: Tree) -> str:
    """A scalar-valued tree as a C float expression."""
    kind = tree[0]
    if kind == "num":
        return f"{tree[1]!r}f".replace("inff", "INFINITY")
    if kind == "name":
        return tree[1]
    if kind == "neg":
        return f"(-{scalar_text(tree[1])})"
    if kind in ("bin", "cmp"):
        return f"({scalar_text(tree[2])} {tree[1]} {scalar_text(tree[3])})"
    if kind == "sel":
        return f"({scalar_text(tree[1])} ? {scalar_text(tree[2])} : {scalar_text(tree[3])})"
    if kind == "call":
        return f"{_C_NAMES.get(tree[1], tree[1])}({', '.join(scalar_text(a) for a in tree[2:])})"
    raise Unsupported(f"a scalar {kind}")


def _selection(cond: Tree, yes: Tree, no: Tree) -> Tree:
    """A ternary the vector unit computes without a mask: max, min, |x|, leaky ReLU."""
    if cond[0] != "cmp" or cond[1] in ("==", "!="):
        raise Unsupported("a ternary on a condition other than an ordering")
    op, p, q = cond[1:]
    less = op in ("<", "<=")
    if (yes, no) == (p, q):
        return ("call", "min" if less else "max", p, q)
    if (yes, no) == (q, p):
        return ("call", "max" if less else "min", p, q)
    small, large = (yes, no) if less else (no, yes)  # the branch taken below zero, above it
    if q == ("num", 0.0) and large == p:
        if small == ("neg", p):
            return ("call", "abs", p)
        if small[0] == "bin" and small[1] == "*" and p in small[2:]:
            factor = small[3] if small[2] == p else small[2]
            if not _is_tensor(factor):
                return ("call", "leaky", p, factor)
    raise Unsupported("a ternary that is not a max, min, abs or leaky ReLU")


def normalized(tree: Tree) -> Tree:
    """The tree with ternaries and powers rewritten into what the lowering knows."""
    if tree[0] in ("num", "name", "in"):
        return tree
    if tree[0] == "sel" and _is_tensor(tree):
        cond, yes, no = tree[1:]
        if cond[0] != "cmp":
            raise Unsupported("a ternary on a condition other than an ordering")
        return normalized(_selection(("cmp", cond[1], normalized(cond[2]), normalized(cond[3])),
                                     normalized(yes), normalized(no)))
    parts = tuple(normalized(p) if isinstance(p, tuple) else p for p in tree[1:])
    tree = (tree[0], *parts)
    if not _is_tensor(tree):
        return tree
    if tree[0] == "cmp":
        raise Unsupported("a comparison used as a value")
    if tree[0] == "call" and tree[1] == "pow":
        base, power = parts[1:]
        if power[0] != "num" or _is_tensor(power):
            raise Unsupported("a power with a computed exponent")
        whole = {2.0: ("bin", "*", base, base), 3.0: ("bin", "*", ("bin", "*", base, base), base),
                 0.5: ("call", "sqrt", base), -1.0: ("bin", "/", ("num", 1.0), base)}
        return whole.get(power[1], ("call", "exp", ("bin", "*", power, ("call", "log", base))))
    return tree


@dataclass
class Lowering:
    """Instruction lines for a tree, with scratch tiles handed out and reused as values die."""
    count: str                                   # the instructions' element count, e.g. (int32_t)n
    leaf_tiles: dict[str, str]                   # input tensor -> the tile holding it
    scratch: list[str] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    _free: list[str] = field(default_factory=list)
    _uses: dict[Tree, int] = field(default_factory=dict)
    _held: dict[Tree, str] = field(default_factory=dict)

    def _count_uses(self, tree: Tree) -> None:
        for part in tree[1:]:
            if isinstance(part, tuple) and _is_tensor(part):
                self._uses[part] = self._uses.get(part, 0) + 1
                if self._uses[part] == 1:
                    self._count_uses(part)

    def _emit(self, op: str, dst: str, *args: str, note: str = "") -> None:
        self.lines.append(f"{op}({', '.join((dst, *args, self.count))});" + (f"  // {note}" if note else ""))

    def _value(self, tree: Tree) -> str:
        """The tile holding a tensor node's value (computing it into scratch the first time)."""
        if tree[0] == "in":
            return self.leaf_tiles[tree[1]]
        if tree not in self._held:
            self._held[tree] = self._compute(tree, None)
        return self._held[tree]

    def _release(self, tree: Tree, kept: str) -> None:
        """One read of `tree` done; its scratch tile is free once nothing else reads it (unless it
        just became the destination `kept`)."""
        self._uses[tree] -= 1
        if self._uses[tree] == 0 and tree[0] != "in" and self._held.get(tree) in self.scratch:
            tile = self._held.pop(tree)
            if tile != kept:
                self._free.append(tile)

    def _destination(self, operands: list[Tree]) -> str:
        for tree in operands:  # an operand's scratch tile that no later node reads
            if tree[0] != "in" and self._uses.get(tree) == 1 and self._held.get(tree) in self.scratch:
                return self._held[tree]
        if not self._free:
            self.scratch.append(f"scratch{len(self.scratch)}")
            self._free.append(self.scratch[-1])
        return self._free.pop()

    def lower(self, tree: Tree, out_tile: str) -> list[str]:
        tree = normalized(tree)
        if not _is_tensor(tree):
            raise Unsupported("a formula that reads no input")
        self._uses = {tree: 1}
        self._count_uses(tree)
        if tree[0] == "in":
            self._emit("Adds", out_tile, self._value(tree), "0.0f", note="a copy of the input")
        else:
            self._compute(tree, out_tile)
        return self.lines

    def into_scratch(self, tree: Tree) -> str:
        """The tile holding the tree's value: an input's own tile, else a scratch tile it is
        computed into (the instructions appended to `lines`)."""
        tree = normalized(tree)
        if not _is_tensor(tree):
            raise Unsupported("a value that reads no input")
        if tree[0] == "in":
            return self.leaf_tiles[tree[1]]
        self._uses = {tree: 1}
        self._count_uses(tree)
        return self._compute(tree, None)

    def _compute(self, tree: Tree, dst: str | None) -> str:
        operands = [p for p in tree[1:] if isinstance(p, tuple) and _is_tensor(p)]
        tiles = [self._value(p) for p in operands]
        dst = dst or self._destination(operands)
        for p in operands:
            self._release(p, dst)
        self._instructions(tree, dst, tiles)
        return dst

    def _instructions(self, tree: Tree, dst: str, tiles: list[str]) -> None:
        kind, note = tree[0], _note(tree)
        if kind == "neg":
            return self._emit("Muls", dst, tiles[0], "-1.0f", note=note)
        if kind == "bin":
            op, a, b = tree[1:]
            if _is_tensor(a) and _is_tensor(b):
                return self._emit({"+": "Add", "-": "Sub", "*": "Mul", "/": "Div"}[op], dst, *tiles, note=note)
            s = scalar_text(b if _is_tensor(a) else a)
            if op in ("+", "*"):
                return self._emit("Adds" if op == "+" else "Muls", dst, tiles[0], s, note=note)
            if op == "-" and _is_tensor(a):
                return self._emit("Adds", dst, tiles[0], _negated(b), note=note)
            if op == "/" and _is_tensor(a):
                return self._emit("Muls", dst, tiles[0], f"1.0f / {s}", note=note)
            if op == "-":  # s - t
                self._emit("Muls", dst, tiles[0], "-1.0f")
                return self._emit("Adds", dst, dst, s, note=note)
            if s == "1.0f":  # 1 / t
                return self._emit("Reciprocal", dst, tiles[0], note=note)
            self._emit("Reciprocal", dst, tiles[0])  # s / t
            return self._emit("Muls", dst, dst, s, note=note)
        role, args = tree[1], tree[2:]
        if role in _UNARY:
            return self._emit(_UNARY[role], dst, tiles[0], note=note)
        if role in ("max", "min"):
            if len(tiles) == 2:
                return self._emit("Max" if role == "max" else "Min", dst, *tiles, note=note)
            s = scalar_text(next(a for a in args if not _is_tensor(a)))
            return self._emit("Maxs" if role == "max" else "Mins", dst, tiles[0], s, note=note)
        if role == "leaky":
            return self._emit("LeakyRelu", dst, tiles[0], scalar_text(args[1]), note=note)
        steps = {"log1p": [("Adds", "1.0f"), ("Ln",)], "expm1": [("Exp",), ("Adds", "-1.0f")],
                 # tanh(x) = 2 / (1 + exp(-2x)) - 1: the twin (like older CANN) has no Tanh
                 "tanh": [("Muls", "-2.0f"), ("Exp",), ("Adds", "1.0f"), ("Reciprocal",), ("Muls", "2.0f"),
                          ("Adds", "-1.0f")]}.get(role)
        if steps is None:
            raise Unsupported(f"a call to {role}")
        for i, (op, *scalar) in enumerate(steps):
            self._emit(op, dst, tiles[0] if i == 0 else dst, *scalar, note=note if i == len(steps) - 1 else "")
        return None


def _negated(tree: Tree) -> str:
    """-tree as C text."""
    if tree[0] == "num":
        return scalar_text(("num", -tree[1]))
    return f"-{tree[1]}" if tree[0] == "name" else f"-{scalar_text(tree)}"


def _note(tree: Tree) -> str:
    """The node as C, inputs by their tensor names, for the instruction's comment."""
    def text(t: Tree) -> str:
        if t[0] == "in":
            return t[1][:-2] if t[1].endswith("Gm") and len(t[1]) > 2 else t[1]
        if t[0] in ("num", "name"):
            return scalar_text(t)
        if t[0] == "neg":
            return f"-{text(t[1])}"
        if t[0] == "bin":
            return f"({text(t[2])} {t[1]} {text(t[3])})"
        return f"{t[1]}({', '.join(text(a) for a in t[2:])})"
    return text(tree).removeprefix("(").removesuffix(")") if tree[0] == "bin" else text(tree)
