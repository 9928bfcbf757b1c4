"""An elementwise formula, read from a scalar kernel's loop body into an expression tree (issue 65).

The first rung computes each output element with plain C statements: locals assigned from inputs
read at the loop's index (`xGm.GetValue(i)`), a few math calls and ternaries, and one
`SetValue(i, ...)`. That subset is small enough to read exactly, so the climb can lower it into the
vector rung's instructions itself (actors/climb_vectorize.py) instead of asking the model to.

A tree is nested tuples, so equal subexpressions are equal values (written once when lowered):
  ("num", 1.0)            a literal            ("name", "alpha")    a scalar from outside the loop
  ("in", "xGm")           an input element     ("neg", a)           -a
  ("bin", "+", a, b)      + - * /              ("call", "exp", a, ...)  a math function, by role
  ("cmp", "<", a, b)      < <= > >= == !=      ("sel", cond, a, b)  cond ? a : b
Anything outside the subset (if, loops, integer operators, another index than the loop's) raises
`Unsupported`: the climb then shows the rung to the model as before.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

Tree = tuple


class Unsupported(ValueError):
    """The formula uses something outside the subset the climb reads."""


# C's math names (float, double, std::) -> the role the lowering knows them by
FUNCTIONS = {**{name: role for role in ("exp", "log", "sqrt", "tanh", "log1p", "expm1", "pow")
                for name in (role, f"{role}f", f"std::{role}")},
             **{name: "abs" for name in ("fabsf", "fabs", "abs", "std::abs", "std::fabs")},
             **{name: "max" for name in ("fmaxf", "fmax", "max", "std::max", "std::fmax")},
             **{name: "min" for name in ("fminf", "fmin", "min", "std::min", "std::fmin")},
             "rsqrtf": "rsqrt"}
_FLOAT_TYPES = {"float", "double", "half"}
_TOKEN = re.compile(r"\s*(?:(?P<num>(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?[fF]?)"
                    r"|(?P<id>[A-Za-z_]\w*(?:::\w+)*)|(?P<op><=|>=|==|!=|&&|\|\||[-+*/()<>?:,.!%]))")


def _tokens(text: str) -> list[str]:
    out, pos = [], 0
    text = text.strip()
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None or match.end() == pos:
            raise Unsupported(f"cannot read {text[pos:pos + 20]!r}")
        out.append(match.group(0).strip())
        pos = match.end()
    return out


class _Reader:
    """Recursive descent over one expression's tokens; `env` holds the locals assigned so far."""

    def __init__(self, text: str, at: Indexing, env: dict[str, Tree]):
        self.toks, self.pos, self.at, self.env = _tokens(text), 0, at, env

    def peek(self, ahead: int = 0) -> str | None:
        return self.toks[self.pos + ahead] if self.pos + ahead < len(self.toks) else None

    def take(self, expected: str | None = None) -> str:
        tok = self.peek()
        if tok is None or (expected is not None and tok != expected):
            raise Unsupported(f"expected {expected or 'more'}, found {tok}")
        self.pos += 1
        return tok

    def whole(self) -> Tree:
        tree = self.ternary()
        if self.peek() is not None:
            raise Unsupported(f"unexpected {self.peek()}")
        return tree

    def ternary(self) -> Tree:
        cond = self.compare()
        if self.peek() != "?":
            return cond
        self.take("?")
        yes = self.ternary()
        self.take(":")
        return ("sel", cond, yes, self.ternary())

    def compare(self) -> Tree:
        left = self.additive()
        if self.peek() in ("<", "<=", ">", ">=", "==", "!="):
            op = self.take()
            return ("cmp", op, left, self.additive())
        return left

    def additive(self) -> Tree:
        tree = self.product()
        while self.peek() in ("+", "-"):
            op = self.take()
            tree = ("bin", op, tree, self.product())
        return tree

    def product(self) -> Tree:
        tree = self.unary()
        while self.peek() in ("*", "/"):
            op = self.take()
            tree = ("bin", op, tree, self.unary())
        return tree

    def unary(self) -> Tree:
        if self.peek() == "-":
            self.take()
            inner = self.unary()
            return ("num", -inner[1]) if inner[0] == "num" else ("neg", inner)
        if self.peek() == "+":
            self.take()
            return self.unary()
        return self.primary()

    def primary(self) -> Tree:
        tok = self.take()
        if tok == "(":
            if self.peek() in _FLOAT_TYPES and self.peek(1) == ")":  # (float) x: a cast
                self.pos += 2
                return self.unary()
            inner = self.ternary()
            self.take(")")
            return inner
        if re.fullmatch(r"[\d.].*", tok):
            return ("num", float(tok.rstrip("fF")))
        if not re.fullmatch(r"[A-Za-z_][\w:]*", tok):
            raise Unsupported(f"unexpected {tok}")
        if tok == "static_cast":
            self.take("<")
            if self.take() not in _FLOAT_TYPES:
                raise Unsupported("a cast to a non-float type")
            self.take(">")
            self.take("(")
            inner = self.ternary()
            self.take(")")
            return inner
        if self.peek() == ".":  # tensor.GetValue(index)
            self.take(".")
            self.take("GetValue")
            self.take("(")
            index, depth = "", 1
            while depth:
                part = self.take()
                depth += {"(": 1, ")": -1}.get(part, 0)
                index += part if depth else ""
            if index not in self.at.reads:
                raise Unsupported("an element read at another index than the loop's")
            return ("in", tok)
        if self.peek() == "(":
            if tok not in FUNCTIONS:
                raise Unsupported(f"a call to {tok}")
            self.take("(")
            args = [self.ternary()]
            while self.peek() == ",":
                self.take(",")
                args.append(self.ternary())
            self.take(")")
            return ("call", FUNCTIONS[tok], *args)
        if tok in self.at.indices:
            raise Unsupported("a loop's index used in the formula")
        return self.env.get(tok, ("name", tok))


@dataclass(frozen=True)
class Indexing:
    """Where a formula may read: the index texts (spaces dropped) of its element reads, and the
    loop indices it may not use as values."""
    reads: frozenset[str]
    indices: frozenset[str]


@dataclass
class Body:
    """What a loop body computes: its locals, what it assigns to names declared outside it (each
    value in terms of the name's value before), and what it writes (tensor, tree), in order."""
    env: dict[str, Tree] = field(default_factory=dict)
    assigned: dict[str, Tree] = field(default_factory=dict)
    writes: list[tuple[str, Tree]] = field(default_factory=list)


_STATEMENT = re.compile(r"^(?:const\s+)?(?P<type>float|double|auto)\s+(?P<decl>\w+)\s*=\s*(?P<init>.+)$"
                        r"|^(?:if\s*\((?P<cond>.+)\)\s*)?(?P<name>\w+)\s*(?P<op>[-+*/]?)=\s*(?P<value>.+)$"
                        r"|^(?P<out>\w+)\s*\.\s*SetValue\s*\(\s*(?P<index>[^,]+?)\s*,\s*(?P<result>.+)\)$", re.S)


def read_body(body: str, at: Indexing, outer: frozenset[str] = frozenset()) -> Body:
    """A loop body's statements: float locals, assignments (`x = `, `x op= `, `if (c) x = `) to
    its locals or to the `outer` names, SetValue writes; raises Unsupported for anything else."""
    text = re.sub(r"/\*.*?\*/", " ", re.sub(r"//[^\n]*", "", body), flags=re.S)
    read = Body()
    for statement in (s.strip() for s in text.split(";")):
        if not statement:
            continue
        match = _STATEMENT.match(statement)
        if match is None or "{" in statement or "}" in statement:
            raise Unsupported(f"a statement the climb does not read: {statement[:40]!r}")
        if match.group("decl"):
            read.env[match.group("decl")] = _Reader(match.group("init"), at, read.env).whole()
        elif match.group("name"):
            name = match.group("name")
            if name not in read.env and name not in outer:
                raise Unsupported(f"an assignment to {name}, not a local of the formula")
            before = read.env.get(name, read.assigned.get(name, ("name", name)))
            value = _Reader(match.group("value"), at, read.env).whole()
            value = ("bin", match.group("op"), before, value) if match.group("op") else value
            if match.group("cond"):
                value = ("sel", _Reader(match.group("cond"), at, read.env).whole(), value, before)
            if name in read.env:
                read.env[name] = value
            else:
                read.assigned[name] = value
        else:
            if re.sub(r"\s", "", match.group("index")) not in at.reads:
                raise Unsupported("the output written at another index than the loop's")
            read.writes.append((match.group("out"), _Reader(match.group("result"), at, read.env).whole()))
    return read


def read_formula(body: str, index: str) -> tuple[str, Tree]:
    """An elementwise loop body's output tensor and the tree of what it writes there, its locals
    substituted; raises Unsupported unless it writes exactly once, at the loop's index."""
    read = read_body(body, Indexing(frozenset({index}), frozenset({index})))
    if len(read.writes) != 1:
        raise Unsupported("not exactly one SetValue in the formula")
    return read.writes[0]


def inputs(tree: Tree) -> set[str]:
    """The tensors a tree reads."""
    if tree[0] == "in":
        return {tree[1]}
    return set().union(*(inputs(part) for part in tree[1:] if isinstance(part, tuple)))


def names(tree: Tree) -> set[str]:
    """The scalars from outside the loop a tree uses."""
    if tree[0] == "name":
        return {tree[1]}
    return set().union(*(names(part) for part in tree[1:] if isinstance(part, tuple)))
