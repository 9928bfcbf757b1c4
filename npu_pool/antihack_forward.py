"""The forward-path check: what `ModelNew.forward` (and everything it calls in the file)
does with tensors, found by a small abstract interpretation over the AST.

Every value gets a kind: a tensor, a plain number (sizes, strides, pointers), a torch path
(`torch.relu`), a compiled extension, a Triton kernel, a function or class of the file, or
unknown. Torch compute on the path (functions, methods, operators, `torch.ops.aten`,
nn layers, builtins such as `sum` over a tensor) is rejected; arithmetic whose operands
cannot be proven to be numbers is flagged for review. Types flow into helpers through
their call sites and into methods through `self` attributes, iterated to a fixed point.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from npu_pool.antihack import Finding
from npu_pool.antihack_torch import (
    ALLOC_FUNCTIONS,
    CAST_METHODS_LOW,
    CAST_METHODS_OTHER,
    COMPUTE_BUILTINS,
    DEVICE_MODULE_ALLOWED,
    DTYPES_LOW,
    DTYPES_OTHER,
    META_FUNCTIONS,
    NEUTRAL_BUILTINS,
    NN_CONTAINER_CLASSES,
    NN_SCALAR_ATTRS,
    TENSOR_ATTRS_SCALAR,
    TENSOR_ATTRS_TENSOR,
    TENSOR_METHODS_FORBIDDEN,
    TENSOR_METHODS_SCALAR,
    TENSOR_METHODS_TENSOR,
    TENSOR_METHODS_WARN,
    VIEW_FUNCTIONS,
)


@dataclass(frozen=True)
class Val:
    """An abstract value. kind: tensor scalar unknown none path ext triton launch func
    lambda class obj nnmod model seq dict tmethod super."""

    kind: str
    ref: str = ""  # path, function id, class name, or method name
    elem: Val | None = None  # element kind of seq/dict; receiver of tmethod
    bound: bool = False  # func: a method bound to an instance (skip `self`)


TENSOR, SCALAR, UNKNOWN, NONE = Val("tensor"), Val("scalar"), Val("unknown"), Val("none")
MODULE_SCOPE = "<module>"  # the module body, analysed like a function whose names are globals


def join(a: Val, b: Val) -> Val:
    if a == b:
        return a
    if a.kind == "none":
        return b
    if b.kind == "none":
        return a
    if "tensor" in (a.kind, b.kind) or (a.kind == "seq" and a.elem == TENSOR) or (b.kind == "seq" and b.elem == TENSOR):
        return TENSOR
    if a.kind == b.kind == "scalar":
        return SCALAR
    return UNKNOWN


@dataclass
class FunctionInfo:
    node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
    owner: str | None  # class name for methods
    scope: str | None  # enclosing function id for nested functions and lambdas
    decorators: list[str] = field(default_factory=list)  # resolved decorator paths

    @property
    def cached(self) -> bool:
        return any(d in ("functools.lru_cache", "functools.cache") for d in self.decorators)

    @property
    def is_static(self) -> bool:
        return "staticmethod" in self.decorators


@dataclass
class ClassInfo:
    node: ast.ClassDef
    bases: list[Val]
    methods: dict[str, str]  # name -> function id
    attrs: dict[str, Val] = field(default_factory=dict)

    def is_autograd_function(self) -> bool:
        return any(b.kind == "path" and b.ref.startswith("torch.autograd.") for b in self.bases)


class Program:
    """The file's functions, classes and module-level bindings, plus the inferred state."""

    def __init__(self, tree: ast.Module, module_env: dict[str, Val], custom_namespaces: set[str]):
        self.tree = tree
        self.module_env = module_env
        self.custom_namespaces = custom_namespaces
        self.functions: dict[str, FunctionInfo] = {}
        self.classes: dict[str, ClassInfo] = {}
        self.params: dict[str, dict[str, Val]] = {}
        self.returns: dict[str, Val] = {}
        self.locals: dict[str, dict[str, Val]] = {}
        self.aliases: dict[str, str] = {}  # import name -> dotted path


class ForwardChecker:
    """Runs the forward-path analysis of one program from its `ModelNew` entry."""

    def __init__(self, program: Program):
        self.p = program
        self.findings: dict[str, list[Finding]] = {}
        self.reached: set[str] = set()
        self.changed = False
        self._queue: list[str] = []

    # --- driver ------------------------------------------------------------------------

    def run(self, entries: list[str], init_functions: list[str]) -> list[Finding]:
        for _ in range(8):
            self.changed = False
            self._queue = []
            for fid in init_functions:
                self._analyse(fid, emit=False)
            self.reached = set()
            self._queue = list(entries)
            while self._queue:
                fid = self._queue.pop()
                if fid in self.reached:
                    continue
                self.reached.add(fid)
                self._analyse(fid, emit=True)
            if not self.changed:
                break
        return [f for fid in self.reached for f in self.findings.get(fid, [])]

    def _enqueue(self, fid: str) -> None:
        if fid not in self.reached and fid in self.p.functions:
            self._queue.append(fid)

    def _analyse(self, fid: str, emit: bool) -> None:
        info = self.p.functions[fid]
        env = dict(self.p.locals.get(fid, {}))
        env.update(self.p.params.get(fid, {}))
        scope = _Scope(self, fid, info, env, emit)
        scope.run()
        self.p.locals[fid] = scope.env
        if fid == MODULE_SCOPE:
            for name, value in scope.env.items():
                if self.p.module_env.get(name, NONE).kind in ("func", "class", "triton"):
                    continue
                if self.p.module_env.get(name) != value:
                    self.p.module_env[name] = value
                    self.changed = True
        if emit:
            self.findings[fid] = scope.findings
        self._set_return(fid, scope.returned)

    def _set_return(self, fid: str, value: Val) -> None:
        old = self.p.returns.get(fid, NONE)
        new = join(old, value)
        if new != old:
            self.p.returns[fid] = new
            self.changed = True

    def bind_params(self, fid: str, args: list[Val], kwargs: dict[str, Val], skip_first: bool,
                    spread: Val | None = None) -> None:
        """Join argument kinds into the parameters of `fid`; `spread` is the element kind of
        `*seq`/`**mapping` arguments, which may land in any parameter."""
        info = self.p.functions.get(fid)
        if info is None:
            return
        spec = info.node.args
        names = [a.arg for a in spec.posonlyargs + spec.args]
        if skip_first and names:
            names = names[1:]
        keyword_only = [a.arg for a in spec.kwonlyargs]
        table = self.p.params.setdefault(fid, {})
        updates = dict(zip(names, args, strict=False))
        if spec.vararg:
            extra = args[len(names):] + ([spread] if spread is not None else [])
            updates[spec.vararg.arg] = Val("seq", elem=_join_all(extra) if extra else NONE)
        unmatched = []
        for key, value in kwargs.items():
            if key in names or key in keyword_only:
                updates[key] = value
            else:
                unmatched.append(value)
        if spec.kwarg:
            extra = unmatched + ([spread] if spread is not None else [])
            updates[spec.kwarg.arg] = Val("dict", elem=_join_all(extra) if extra else NONE)
        if spread is not None:
            for name in names[len(args):] + keyword_only:
                updates[name] = join(updates.get(name, NONE), spread)
        for name, value in updates.items():
            new = join(table.get(name, NONE), value)
            if table.get(name) != new:
                table[name] = new
                self.changed = True

    def set_attr(self, cls: str, name: str, value: Val) -> None:
        info = self.p.classes.get(cls)
        if info is None:
            return
        new = join(info.attrs.get(name, NONE), value)
        if info.attrs.get(name) != new:
            info.attrs[name] = new
            self.changed = True


def _join_all(values: list[Val]) -> Val:
    out = NONE
    for value in values:
        out = join(out, value)
    return out


_ARITH_DUNDERS = {
    "__add__", "__radd__", "__iadd__", "__sub__", "__rsub__", "__isub__", "__mul__", "__rmul__",
    "__imul__", "__truediv__", "__rtruediv__", "__itruediv__", "__floordiv__", "__mod__", "__pow__",
    "__rpow__", "__matmul__", "__rmatmul__", "__neg__", "__abs__", "__and__", "__or__", "__xor__",
    "__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__", "__invert__", "__getitem__", "__setitem__",
}


class _Scope:
    """One analysis of one function body."""

    def __init__(self, checker: ForwardChecker, fid: str, info: FunctionInfo, env: dict[str, Val], emit: bool):
        self.c, self.p, self.fid, self.info, self.env, self.emit = checker, checker.p, fid, info, env, emit
        self.findings: list[Finding] = []
        self.returned = NONE
        self.declared_global: set[str] = set()
        self.pointer_names: set[str] = set()  # locals computed from data_ptr()/id()
        self.shape_names: set[str] = set()  # locals computed from shapes
        spec = info.node.args
        params = [a.arg for a in spec.posonlyargs + spec.args]
        if info.owner and params and not info.is_static and "classmethod" not in info.decorators:
            self.env[params[0]] = Val("obj", info.owner)
        if info.owner and params and "classmethod" in info.decorators:
            self.env[params[0]] = Val("class", info.owner)
        for name in params + [a.arg for a in spec.kwonlyargs]:
            self.env.setdefault(name, UNKNOWN)
        self.params = set(params[1:] if info.owner and not info.is_static else params)

    def pointerish(self, node: ast.AST | None) -> bool:
        """Does the expression use a data pointer or object id, directly or via a local?"""
        return _mentions_pointer(node, self.pointer_names)

    def shapeish(self, node: ast.AST | None) -> bool:
        return _mentions_shape(node, self.shape_names)

    def flag(self, node: ast.AST, rule: str, severity: str, message: str) -> None:
        if self.emit:
            self.findings.append(Finding(rule=rule, severity=severity, message=message, line=getattr(node, "lineno", None)))

    def compute(self, node: ast.AST, what: str) -> None:
        self.flag(node, "torch_compute", "reject", f"{what} is torch compute inside forward; do this work in your kernel")

    # --- statements ----------------------------------------------------------------------

    def run(self) -> None:
        node = self.info.node
        if isinstance(node, ast.Lambda):
            self.returned = self.expr(node.body)
            return
        for _ in range(2):  # twice, so names assigned late in a loop are known early
            self.findings.clear()
            self.returned = NONE
            self.block(node.body)

    def block(self, body: list[ast.stmt]) -> None:
        for stmt in body:
            self.stmt(stmt)

    def stmt(self, s: ast.stmt) -> None:
        if isinstance(s, ast.Return):
            value = self.expr(s.value) if s.value is not None else NONE
            self.returned = join(self.returned, value)
            if value.kind == "path" and _is_torch_callable(value.ref):
                self.compute(s, f"handing out {value.ref}")
            if self.info.node.name == "forward" and isinstance(s.value, ast.Name) and s.value.id in self.params:
                self.flag(s, "returns_input", "warn", f"forward returns its input '{s.value.id}'; return a new output tensor")
        elif isinstance(s, ast.Assign):
            value = self.expr(s.value)
            for target in s.targets:
                self.assign(target, value, s.value)
        elif isinstance(s, ast.AnnAssign):
            if s.value is not None:
                self.assign(s.target, self.expr(s.value), s.value)
        elif isinstance(s, ast.AugAssign):
            left = self.expr(s.target)
            right = self.expr(s.value)
            self.binop(s, left, right, type(s.op).__name__)
            self.assign(s.target, join(left, right), s.value)
        elif isinstance(s, ast.Expr):
            self.expr(s.value)
        elif isinstance(s, (ast.If, ast.While)):
            self.expr(s.test)
            self.block(s.body)
            self.block(s.orelse)
        elif isinstance(s, (ast.For, ast.AsyncFor)):
            self.assign(s.target, self.element(s, self.expr(s.iter)), None)
            self.block(s.body)
            self.block(s.orelse)
        elif isinstance(s, (ast.With, ast.AsyncWith)):
            for item in s.items:
                self.expr(item.context_expr)
                if item.optional_vars is not None:
                    self.assign(item.optional_vars, UNKNOWN, None)
            self.block(s.body)
        elif isinstance(s, (ast.Try, ast.TryStar)):
            if s.handlers:
                self.flag(s, "fallback", "reject", "try/except on the forward path (a fallback); remove it and let the kernel run or fail")
            self.block(s.body)
            for handler in s.handlers:
                self.block(handler.body)
            self.block(s.orelse)
            self.block(s.finalbody)
        elif isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self.env[s.name] = Val("func", f"{self.fid}.{s.name}")
        elif isinstance(s, ast.ClassDef):
            self.env[s.name] = Val("class", s.name) if s.name in self.p.classes else UNKNOWN
        elif isinstance(s, (ast.Import, ast.ImportFrom)):
            for alias in s.names:
                if isinstance(s, ast.Import):
                    name = alias.asname or alias.name.split(".")[0]
                    path = alias.name if alias.asname else alias.name.split(".")[0]
                else:
                    name, path = alias.asname or alias.name, f"{s.module}.{alias.name}"
                self.env[name] = Val("path", path)
        elif isinstance(s, (ast.Global, ast.Nonlocal)):
            self.declared_global.update(s.names)
        elif isinstance(s, ast.Match):
            self.expr(s.subject)
            for case in s.cases:
                self.block(case.body)
        elif isinstance(s, ast.Raise | ast.Assert):
            for child in ast.iter_child_nodes(s):
                if isinstance(child, ast.expr):
                    self.expr(child)
        elif isinstance(s, ast.Delete):
            for target in s.targets:
                self.expr(target)

    def assign(self, target: ast.expr, value: Val, value_node: ast.expr | None) -> None:
        if isinstance(target, ast.Name) and target.id in self.declared_global and value.kind not in ("ext", "none"):
            # a lazily built extension is fine; anything else kept across calls looks like a cache
            self.flag(target, "state", "warn", f"forward stores '{target.id}' in global state; keep forward stateless")
        if self.pointerish(value_node) and isinstance(target, ast.Name) and target.id in self.declared_global:
            self.flag(target, "output_cache", "reject", "storing a data_ptr()/id() in global state is an output cache keyed by pointer")
        if isinstance(target, ast.Name) and value_node is not None:
            if self.pointerish(value_node):
                self.pointer_names.add(target.id)
            elif self.shapeish(value_node):
                self.shape_names.add(target.id)
        if isinstance(target, ast.Name):
            self.env[target.id] = join(self.env.get(target.id, NONE), value) if self.env.get(target.id) not in (None, UNKNOWN) else value
        elif isinstance(target, (ast.Tuple, ast.List)):
            items = value_node.elts if isinstance(value_node, (ast.Tuple, ast.List)) and len(value_node.elts) == len(target.elts) else None
            for i, sub in enumerate(target.elts):
                sub_value = self.expr(items[i]) if items else self.element(sub, value, quiet=True)
                self.assign(sub.value if isinstance(sub, ast.Starred) else sub, sub_value, None)
        elif isinstance(target, ast.Attribute):
            base = self.expr(target.value)
            if base.kind == "obj":
                self.c.set_attr(base.ref, target.attr, value)
                if self.pointerish(value_node):
                    self.flag(target, "output_cache", "reject", "storing a data_ptr()/id() in module state is an output cache keyed by pointer; recompute every call")
        elif isinstance(target, ast.Subscript):
            base = self.expr(target.value)
            self.subscript_key(target, base)
            if base.kind == "tensor" and value.kind == "tensor":
                self.compute(target, "assigning a tensor into a slice of another (a copy)")
            elif base.kind == "tensor":
                self.flag(target, "slice_write", "warn", "writing tensor elements from Python is compute; let the kernel write the output")

    def element(self, node: ast.AST, value: Val, quiet: bool = False) -> Val:
        """The kind of one element when iterating over or unpacking `value`."""
        if value.kind in ("seq", "dict"):
            return value.elem or UNKNOWN
        if value.kind == "tensor":
            if not quiet:
                self.flag(node, "tensor_iteration", "warn", "iterating over a tensor in Python computes per element; index it in the kernel")
            return TENSOR
        if value.kind == "scalar":
            return SCALAR
        return UNKNOWN

    # --- expressions ---------------------------------------------------------------------

    def expr(self, e: ast.expr | None) -> Val:
        if e is None:
            return NONE
        method = getattr(self, "e_" + type(e).__name__, None)
        if method is not None:
            return method(e)
        for child in ast.iter_child_nodes(e):
            if isinstance(child, ast.expr):
                self.expr(child)
        return UNKNOWN

    def e_Constant(self, e: ast.Constant) -> Val:
        return NONE if e.value is None else SCALAR

    def e_JoinedStr(self, e: ast.JoinedStr) -> Val:
        for value in e.values:
            self.expr(value)
        return SCALAR

    def e_FormattedValue(self, e: ast.FormattedValue) -> Val:
        self.expr(e.value)
        return SCALAR

    def e_Name(self, e: ast.Name) -> Val:
        if e.id in self.env:
            return self.env[e.id]
        scope = self.info.scope
        while scope is not None:  # closures: names of enclosing functions
            outer = self.p.locals.get(scope, {})
            if e.id in outer:
                return outer[e.id]
            scope = self.p.functions[scope].scope if scope in self.p.functions else None
        if e.id in self.p.module_env:
            return self.p.module_env[e.id]
        if e.id == "Model":
            return Val("model")
        if e.id in COMPUTE_BUILTINS or e.id in NEUTRAL_BUILTINS or e.id in ("id", "hash", "getattr", "setattr"):
            return Val("path", f"builtins.{e.id}")
        return UNKNOWN

    def e_NamedExpr(self, e: ast.NamedExpr) -> Val:
        value = self.expr(e.value)
        self.assign(e.target, value, e.value)
        return value

    def e_Tuple(self, e: ast.Tuple | ast.List | ast.Set) -> Val:
        values = [self.expr(x.value if isinstance(x, ast.Starred) else x) for x in e.elts]
        if all(v.kind == "scalar" for v in values):
            return SCALAR
        return Val("seq", elem=_join_all(values) if values else NONE)

    e_List = e_Set = e_Tuple

    def e_Dict(self, e: ast.Dict) -> Val:
        for key in e.keys:
            self.expr(key)
        return Val("dict", elem=_join_all([self.expr(v) for v in e.values]) if e.values else NONE)

    def e_ListComp(self, e: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp) -> Val:
        for gen in e.generators:
            self.assign(gen.target, self.element(gen, self.expr(gen.iter)), None)
            for cond in gen.ifs:
                self.expr(cond)
        if isinstance(e, ast.DictComp):
            self.expr(e.key)
            return Val("dict", elem=self.expr(e.value))
        elem = self.expr(e.elt)
        return SCALAR if elem.kind == "scalar" else Val("seq", elem=elem)

    e_SetComp = e_GeneratorExp = e_DictComp = e_ListComp

    def e_Lambda(self, e: ast.Lambda) -> Val:
        fid = f"{self.fid}.<lambda@{e.lineno}:{e.col_offset}>"
        if fid not in self.p.functions:
            self.p.functions[fid] = FunctionInfo(node=e, owner=None, scope=self.fid)
        return Val("func", fid)

    def e_IfExp(self, e: ast.IfExp) -> Val:
        self.expr(e.test)
        return join(self.expr(e.body), self.expr(e.orelse))

    def e_BoolOp(self, e: ast.BoolOp) -> Val:
        return _join_all([self.expr(v) for v in e.values])

    def e_Starred(self, e: ast.Starred) -> Val:
        return self.expr(e.value)

    def e_Await(self, e: ast.Await) -> Val:
        return self.expr(e.value)

    def e_BinOp(self, e: ast.BinOp) -> Val:
        left, right = self.expr(e.left), self.expr(e.right)
        return self.binop(e, left, right, type(e.op).__name__)

    def binop(self, node: ast.AST, left: Val, right: Val, op: str) -> Val:
        if "tensor" in (left.kind, right.kind):
            self.compute(node, f"the operator {_OPS.get(op, op)} on a tensor")
            return TENSOR
        if left.kind == right.kind == "scalar" or {left.kind, right.kind} <= {"scalar", "none"}:
            return SCALAR
        if left.kind in ("seq",) or right.kind in ("seq",):
            return UNKNOWN
        self.flag(node, "maybe_tensor_arithmetic", "warn", f"cannot tell whether the operands of {_OPS.get(op, op)} are numbers or tensors; keep tensor math in the kernel")
        return UNKNOWN

    def e_UnaryOp(self, e: ast.UnaryOp) -> Val:
        value = self.expr(e.operand)
        if isinstance(e.op, ast.Not):
            return SCALAR
        if value.kind == "tensor":
            self.compute(e, f"the unary operator {_OPS.get(type(e.op).__name__, '')} on a tensor")
            return TENSOR
        return value

    def e_Compare(self, e: ast.Compare) -> Val:
        values = [self.expr(e.left)] + [self.expr(c) for c in e.comparators]
        operands = [e.left, *e.comparators]
        for op, left, right, left_node, right_node in zip(e.ops, values, values[1:], operands, operands[1:], strict=False):
            if isinstance(op, (ast.In, ast.NotIn)):
                self.cache_key(e, left_node, right)
                continue
            if self.pointerish(left_node) or self.pointerish(right_node):
                self.flag(e, "output_cache", "reject", "comparing data_ptr()/id() of inputs means caching by pointer; recompute every call")
            if isinstance(op, (ast.Is, ast.IsNot)):
                if "tensor" in (left.kind, right.kind) and "none" not in (left.kind, right.kind) and not (
                    isinstance(left_node, ast.Constant) or isinstance(right_node, ast.Constant)):
                    self.flag(e, "identity_check", "warn", "identity checks on tensors suggest reuse of earlier results")
                continue
            if "tensor" in (left.kind, right.kind):
                self.compute(e, "comparing tensors elementwise")
                return TENSOR
        return SCALAR

    def e_Attribute(self, e: ast.Attribute) -> Val:
        base = self.expr(e.value)
        return self.attribute(e, base, e.attr)

    def attribute(self, node: ast.AST, base: Val, attr: str) -> Val:
        kind = base.kind
        if kind == "path":
            return Val("path", f"{base.ref}.{attr}")
        if kind == "tensor":
            if attr in TENSOR_ATTRS_SCALAR:
                return SCALAR
            if attr in TENSOR_ATTRS_TENSOR:
                return TENSOR
            return Val("tmethod", attr, elem=TENSOR)
        if kind in ("obj", "class", "super"):
            return self.member(base, attr)
        if kind == "ext":
            return Val("ext", attr)
        if kind == "nnmod":
            if attr in NN_SCALAR_ATTRS:
                return SCALAR
            if "weight" in attr or "bias" in attr or attr.startswith("running_"):
                return TENSOR
            return Val("nnmethod", attr, elem=base)
        if kind == "scalar":
            return SCALAR
        if kind in ("seq", "dict"):
            return Val("cmethod", attr, elem=base)
        if kind == "model":
            return Val("model")
        return Val("umethod", attr)

    def member(self, base: Val, attr: str) -> Val:
        """An attribute of an instance, of a class of the file, or of super()."""
        if base.kind == "super":
            for b in self.p.classes[base.ref].bases:
                if b.kind == "class":
                    found = self._lookup(b.ref, attr, on_class=False)
                    if found is not None:
                        return found
                elif b.kind == "path":
                    return Val("path", f"{b.ref}.{attr}")
            return UNKNOWN
        on_class = base.kind == "class"
        found = self._lookup(base.ref, attr, on_class)
        if found is not None:
            return found
        if on_class and attr == "apply" and self.p.classes[base.ref].is_autograd_function():
            fid = self.p.classes[base.ref].methods.get("forward")
            return Val("func", fid, bound=True) if fid else UNKNOWN
        if attr == "training":
            return SCALAR
        return UNKNOWN

    def _lookup(self, cls: str, attr: str, on_class: bool, seen: frozenset = frozenset()) -> Val | None:
        info = self.p.classes.get(cls)
        if info is None or cls in seen:
            return None
        if attr in info.methods:
            fid = info.methods[attr]
            return Val("func", fid, bound=not on_class and not self.p.functions[fid].is_static)
        if attr in info.attrs:
            return info.attrs[attr]
        for b in info.bases:
            if b.kind == "class":
                found = self._lookup(b.ref, attr, on_class, seen | {cls})
                if found is not None:
                    return found
        return None

    def e_Subscript(self, e: ast.Subscript) -> Val:
        base = self.expr(e.value)
        index = self.expr(e.slice)
        self.subscript_key(e, base)
        if base.kind == "tensor":
            if index.kind == "tensor" or (index.kind == "seq" and index.elem == TENSOR):
                self.compute(e, "indexing a tensor with a tensor (gather)")
            return TENSOR
        if base.kind == "triton":
            return Val("launch", base.ref)
        if base.kind in ("seq", "dict"):
            return base.elem or UNKNOWN
        if base.kind == "scalar":
            return SCALAR
        if base.kind == "path":
            return base  # typing.Optional[...] and friends
        return UNKNOWN

    def subscript_key(self, e: ast.Subscript, base: Val) -> None:
        if base.kind in ("tensor", "scalar", "path", "triton"):
            return
        self.cache_key(e, e.slice, base)

    def cache_key(self, node: ast.AST, key: ast.expr, container: Val) -> None:
        if container.kind in ("tensor", "scalar"):
            return
        if self.pointerish(key):
            self.flag(node, "output_cache", "reject", "a lookup keyed by data_ptr()/id() is an output cache; recompute every call")
        elif self.shapeish(key):
            self.flag(node, "shape_cache", "warn", "a lookup keyed by shapes: cache only compiled kernels or buffers, never outputs")

    # --- calls ---------------------------------------------------------------------------

    def e_Call(self, e: ast.Call) -> Val:
        if isinstance(e.func, ast.Name) and e.func.id == "getattr" and len(e.args) >= 2 and _const_str(e.args[1]) is not None:
            base = self.expr(e.args[0])
            return self.attribute(e, base, _const_str(e.args[1]))
        func = self.expr(e.func)
        args = [self.expr(a) for a in e.args if not isinstance(a, ast.Starred)]
        kwargs = {k.arg: self.expr(k.value) for k in e.keywords if k.arg}
        spread_values = [self.element(a, self.expr(a.value), quiet=True) for a in e.args if isinstance(a, ast.Starred)]
        spread_values += [self.element(k, self.expr(k.value), quiet=True) for k in e.keywords if not k.arg]
        spread = _join_all(spread_values) if spread_values else None
        every = args + list(kwargs.values()) + spread_values
        kind = func.kind
        if kind == "path":
            return self.call_path(e, func.ref, every, kwargs)
        if kind == "func":
            return self.call_function(e, func, args, kwargs, spread)
        if kind == "class":
            info = self.p.classes[func.ref]
            init = info.methods.get("__init__")
            if init:
                self.c.bind_params(init, args, kwargs, skip_first=True, spread=spread)
                self.c._enqueue(init)
            return Val("obj", func.ref)
        if kind == "obj":
            target = self.member(func, "__call__")
            if target.kind != "func":
                target = self.member(func, "forward")
            if target.kind == "func":
                return self.call_function(e, target, args, kwargs, spread)
            if target.kind == "path":
                self.compute(e, f"calling {target.ref}")
            return UNKNOWN
        if kind == "tmethod":
            return self.tensor_method(e, func.ref, every, kwargs)
        if kind in ("ext", "launch"):
            return TENSOR if kind == "ext" else NONE
        if kind == "nnmod":
            self.compute(e, f"calling the torch layer {func.ref}")
            return TENSOR
        if kind == "nnmethod":
            if func.ref in ("parameters", "named_parameters", "buffers", "named_buffers", "extra_repr", "state_dict"):
                return UNKNOWN
            self.compute(e, f"the torch layer method .{func.ref}()")
            return TENSOR
        if kind == "model":
            self.flag(e, "reference_model", "reject", "calling the reference Model; write the kernel")
            return TENSOR
        if kind == "super":
            return UNKNOWN
        if kind == "cmethod":
            container = func.elem or UNKNOWN
            if func.ref in ("get", "setdefault", "pop") and e.args:
                self.cache_key(e, e.args[0], container)
                return container.elem or UNKNOWN
            return UNKNOWN
        if kind == "scalar":
            if any(v.kind == "tensor" for v in every):
                self.flag(e, "unresolved_call", "warn", "cannot tell what this call does with tensors; call your kernel directly")
            return SCALAR
        if kind == "umethod":
            if func.ref in _ARITH_DUNDERS:
                self.compute(e, f"the operator method {func.ref}")
                return TENSOR
            if any(v.kind == "tensor" for v in every):
                self.flag(e, "unresolved_call", "warn", f"cannot tell what .{func.ref}() is called on; only your kernel may compute on tensors")
            return UNKNOWN
        if any(v.kind == "tensor" for v in every):
            self.flag(e, "unresolved_call", "warn", "cannot tell what this call does with tensors; call your kernel directly")
        return UNKNOWN

    def call_function(self, e: ast.Call, func: Val, args: list[Val], kwargs: dict[str, Val],
                      spread: Val | None = None) -> Val:
        info = self.p.functions.get(func.ref)
        if info is None:
            return UNKNOWN
        if any(d.startswith("triton.") for d in info.decorators):
            return UNKNOWN
        skip = func.bound or (info.owner is not None and not info.is_static and func.ref.split(".")[-1] == "__init__")
        if info.cached and (len(args) + len(kwargs)) > 0:
            self.flag(e, "output_cache", "reject", "functools.cache/lru_cache on a function called with arguments on the forward path caches results; cache only a zero-argument kernel builder")
        local_decorators = [d for d in info.decorators if d in self.p.module_env and self.p.module_env[d].kind == "func"]
        if local_decorators:
            # the decorator's wrapper runs instead of the function: follow what it returns
            result = UNKNOWN
            for name in local_decorators:
                decorator = self.p.module_env[name]
                self.c.bind_params(decorator.ref, [Val("func", func.ref)], {}, skip_first=False)
                self.c._enqueue(decorator.ref)
                wrapper = self.p.returns.get(decorator.ref, UNKNOWN)
                if wrapper.kind == "func" and wrapper.ref != func.ref:
                    result = self.call_function(e, wrapper, args, kwargs, spread)
                elif wrapper.kind != "func":
                    self.flag(e, "unresolved_call", "warn", f"cannot tell what the decorator {name} makes of this function")
            return result
        self.c.bind_params(func.ref, args, kwargs, skip_first=skip, spread=spread)
        self.c._enqueue(func.ref)
        returned = self.p.returns.get(func.ref, UNKNOWN)
        if returned.kind == "path" and _is_torch_callable(returned.ref):
            self.compute(e, f"returning {returned.ref} to be called")
        return returned

    def call_path(self, e: ast.Call, path: str, args: list[Val], kwargs: dict[str, Val]) -> Val:
        parts = path.split(".")
        head = parts[0]
        if head == "builtins":
            name = parts[1]
            if name in ("id", "hash"):
                return SCALAR
            if name == "type" and len(args) == 1 and args[0].kind == "tensor":
                return Val("path", "torch.Tensor")
            if name in COMPUTE_BUILTINS:
                if any(v.kind == "tensor" or (v.kind == "seq" and v.elem == TENSOR) for v in args):
                    self.compute(e, f"the builtin {name}() over tensors")
                    return TENSOR
                if any(v.kind == "unknown" for v in args):
                    self.flag(e, "maybe_tensor_arithmetic", "warn", f"cannot tell whether {name}() runs over tensors; keep tensor math in the kernel")
                return SCALAR if all(v.kind == "scalar" for v in args) else UNKNOWN
            if name in ("int", "float", "bool", "len", "str", "repr", "isinstance", "issubclass", "callable", "hasattr", "format", "ord", "chr", "hex", "complex"):
                return SCALAR
            if name in ("tuple", "list", "set", "frozenset") and args:
                return SCALAR if args[0].kind == "scalar" else Val("seq", elem=self.element(e, args[0], quiet=True))
            if name == "range":
                return SCALAR
            if name == "super":
                return Val("super", self.info.owner) if self.info.owner else UNKNOWN
            return UNKNOWN
        if head in ("torch", "torch_npu"):
            return self.call_torch(e, path, args, kwargs)
        if head == "triton":
            return SCALAR
        if head in ("math", "cmath", "numpy", "operator", "functools", "itertools", "einops", "statistics", "scipy", "jax", "cupy", "numba"):
            if any(v.kind == "tensor" or (v.kind == "seq" and v.elem == TENSOR) for v in args):
                self.compute(e, f"{path}() on tensors (compute outside your kernel)")
                return TENSOR
            if head in ("numpy", "operator") and any(v.kind == "unknown" for v in args):
                self.flag(e, "maybe_tensor_arithmetic", "warn", f"cannot tell whether {path}() runs over tensors; keep tensor math in the kernel")
            if path == "functools.partial" and args:
                return args[0]
            return SCALAR if all(v.kind == "scalar" for v in args) else UNKNOWN
        if any(v.kind == "tensor" for v in args):
            self.flag(e, "unresolved_call", "warn", f"{path}() receives tensors; only your compiled kernel may compute on them")
        return UNKNOWN

    def call_torch(self, e: ast.Call, path: str, args: list[Val], kwargs: dict[str, Val]) -> Val:
        parts = path.split(".")
        name = parts[-1]
        if path in ("torch.utils.cpp_extension.load_inline", "torch.utils.cpp_extension.load"):
            return Val("ext", path)
        if len(parts) >= 3 and parts[1] == "ops":
            if parts[2] in self.p.custom_namespaces:
                return TENSOR
            self.compute(e, f"{'.'.join(parts[:4])} (a built-in operator)")
            return TENSOR
        if len(parts) == 2 and parts[0] == "torch":
            if name in ALLOC_FUNCTIONS:
                self._dtype_args(e, args, kwargs)
                return TENSOR
            if name in VIEW_FUNCTIONS:
                return TENSOR
            if name in META_FUNCTIONS:
                return SCALAR
        if parts[:2] in (["torch", "cuda"], ["torch", "npu"], ["torch_npu", "npu"]) and len(parts) >= 3:
            if parts[2] in DEVICE_MODULE_ALLOWED:
                return SCALAR
        if parts[:2] == ["torch", "nn"] and len(parts) == 3:
            if name in ("Parameter", "Buffer"):
                return TENSOR
            if name == "Module":
                return Val("nnmod", path)  # an empty holder for parameters (`self.gemm.weight`)
            if name in NN_CONTAINER_CLASSES:
                return Val("seq", elem=self.element(e, args[0], quiet=True)) if args else UNKNOWN
            if name[:1].isupper():
                return Val("nnmod", path)
        if parts[:2] in (["torch", "backends"], ["torch", "utils"]) and "cpp_extension" in parts:
            return SCALAR
        if parts[:2] == ["torch", "backends"]:
            return SCALAR
        if parts[:2] == ["torch", "Tensor"] and len(parts) == 3:
            return self.tensor_method(e, name, args[1:], kwargs)
        if parts == ["torch", "autograd", "Function"] or path.startswith("torch.autograd.function"):
            return UNKNOWN
        self.compute(e, f"{path}()")
        return TENSOR

    def tensor_method(self, e: ast.Call, name: str, args: list[Val], kwargs: dict[str, Val]) -> Val:
        if name in TENSOR_METHODS_FORBIDDEN:
            rule, message = TENSOR_METHODS_FORBIDDEN[name]
            self.flag(e, rule, "reject", message)
            return UNKNOWN
        if name in TENSOR_METHODS_WARN:
            rule, message = TENSOR_METHODS_WARN[name]
            self.flag(e, rule, "warn", message)
        if name in CAST_METHODS_LOW:
            self.flag(e, "precision", "reject", f".{name}() lowers precision; compute in the task's dtype")
            return TENSOR
        if name in CAST_METHODS_OTHER:
            self.flag(e, "cast", "warn", f".{name}() casts with torch; keep the task dtype or cast inside the kernel")
            return TENSOR
        if name in ("to", "type", "new_empty", "new_zeros", "new_ones", "new_full"):
            self._dtype_args(e, args, kwargs)
            return TENSOR
        if name in TENSOR_METHODS_SCALAR:
            return SCALAR
        if name in TENSOR_METHODS_TENSOR:
            return TENSOR
        self.compute(e, f"the tensor method .{name}()")
        return TENSOR

    def _dtype_args(self, e: ast.Call, args: list[Val], kwargs: dict[str, Val]) -> None:
        for value in args + list(kwargs.values()):
            if value.kind == "path" and value.ref.startswith("torch."):
                dtype = value.ref.split(".")[-1]
                if dtype in DTYPES_LOW:
                    self.flag(e, "precision", "reject", f"{value.ref} lowers precision; compute in the task's dtype")
                elif dtype in DTYPES_OTHER and e.func and isinstance(e.func, ast.Attribute) and e.func.attr in ("to", "type"):
                    self.flag(e, "cast", "warn", f"casting to {value.ref} with torch; keep the task dtype or cast inside the kernel")


_OPS = {
    "Add": "+", "Sub": "-", "Mult": "*", "Div": "/", "FloorDiv": "//", "Mod": "%", "Pow": "**",
    "MatMult": "@", "BitAnd": "&", "BitOr": "|", "BitXor": "^", "LShift": "<<", "RShift": ">>",
    "USub": "-", "UAdd": "+", "Invert": "~",
}
_POINTER_CALLS = {"data_ptr", "id", "hash", "_cdata", "untyped_storage", "storage", "__array_interface__", "_version"}
_SHAPE_NAMES = {"shape", "size", "numel", "stride"}


def _mentions_pointer(node: ast.AST | None, tainted: set[str] | frozenset = frozenset()) -> bool:
    if node is None:
        return False
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and sub.id in tainted:
            return True
        if isinstance(sub, ast.Attribute) and sub.attr in _POINTER_CALLS:
            return True
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and sub.func.id in ("id", "hash"):
            return True
    return False


def _mentions_shape(node: ast.AST | None, tainted: set[str] | frozenset = frozenset()) -> bool:
    if node is None:
        return False
    return any((isinstance(sub, ast.Attribute) and sub.attr in _SHAPE_NAMES) or (isinstance(sub, ast.Name) and sub.id in tainted)
               for sub in ast.walk(node))


def _const_str(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


_TORCH_NON_CALLABLES = {"Tensor", "Size", "device", "dtype", "finfo", "iinfo", "float32", "float", "float64", "double",
                        "float16", "half", "bfloat16", "int8", "int16", "int32", "int64", "int", "long", "bool", "uint8",
                        "complex64", "complex128", "contiguous_format", "channels_last", "preserve_format", "strided"}


def _is_torch_callable(path: str) -> bool:
    """A torch function or class that computes when called (not dtypes, devices, types)."""
    parts = path.split(".")
    return parts[0] in ("torch", "torch_npu") and len(parts) > 1 and parts[-1] not in _TORCH_NON_CALLABLES and not (
        len(parts) == 2 and parts[1] in ALLOC_FUNCTIONS | VIEW_FUNCTIONS | META_FUNCTIONS) and parts[1] not in ("cuda", "npu", "backends", "utils")
