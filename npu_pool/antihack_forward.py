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

from npu_pool.antihack import Finding
from npu_pool.antihack_calls import CallRules
from npu_pool.antihack_torch import (
    COMPUTE_BUILTINS,
    NEUTRAL_BUILTINS,
    NN_SCALAR_ATTRS,
    TENSOR_ATTRS_SCALAR,
    TENSOR_ATTRS_TENSOR,
)
from npu_pool.antihack_values import (
    MODULE_SCOPE,
    NONE,
    OPERATOR_SYMBOLS,
    SCALAR,
    TENSOR,
    UNKNOWN,
    FunctionInfo,
    Program,
    Val,
    is_torch_callable,
    join,
    join_all,
    mentions_pointer,
    mentions_shape,
)


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
            updates[spec.vararg.arg] = Val("seq", elem=join_all(extra) if extra else NONE)
        unmatched = []
        for key, value in kwargs.items():
            if key in names or key in keyword_only:
                updates[key] = value
            else:
                unmatched.append(value)
        if spec.kwarg:
            extra = unmatched + ([spread] if spread is not None else [])
            updates[spec.kwarg.arg] = Val("dict", elem=join_all(extra) if extra else NONE)
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


class _Scope(CallRules):
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
        # A callable default (`f=torch.relu`) is what the parameter holds when the harness,
        # which passes only the task's inputs, leaves it out.
        defaulted = list(zip(params[len(params) - len(spec.defaults):], spec.defaults, strict=False))
        defaulted += [(a.arg, d) for a, d in zip(spec.kwonlyargs, spec.kw_defaults, strict=False) if d is not None]
        for name, default in defaulted:
            value = self.expr(default)
            if value.kind in ("path", "func", "nnmod", "ext", "class", "obj"):
                self.env[name] = value
        self.params = set(params[1:] if info.owner and not info.is_static else params)

    def pointerish(self, node: ast.AST | None) -> bool:
        """Does the expression use a data pointer or object id, directly or via a local?"""
        return mentions_pointer(node, self.pointer_names)

    def shapeish(self, node: ast.AST | None) -> bool:
        return mentions_shape(node, self.shape_names)

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
            if value.kind == "path" and is_torch_callable(value.ref):
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
        return Val("seq", elem=join_all(values) if values else NONE)

    e_List = e_Set = e_Tuple

    def e_Dict(self, e: ast.Dict) -> Val:
        for key in e.keys:
            self.expr(key)
        return Val("dict", elem=join_all([self.expr(v) for v in e.values]) if e.values else NONE)

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
        return join_all([self.expr(v) for v in e.values])

    def e_Starred(self, e: ast.Starred) -> Val:
        return self.expr(e.value)

    def e_Await(self, e: ast.Await) -> Val:
        return self.expr(e.value)

    def e_Yield(self, e: ast.Yield | ast.YieldFrom) -> Val:
        value = self.expr(e.value) if e.value is not None else NONE
        self.returned = join(self.returned, value)  # what the generator hands out
        return UNKNOWN

    e_YieldFrom = e_Yield

    def e_BinOp(self, e: ast.BinOp) -> Val:
        left, right = self.expr(e.left), self.expr(e.right)
        return self.binop(e, left, right, type(e.op).__name__)

    def binop(self, node: ast.AST, left: Val, right: Val, op: str) -> Val:
        if "tensor" in (left.kind, right.kind):
            self.compute(node, f"the operator {OPERATOR_SYMBOLS.get(op, op)} on a tensor")
            return TENSOR
        if left.kind == right.kind == "scalar" or {left.kind, right.kind} <= {"scalar", "none"}:
            return SCALAR
        if left.kind in ("seq",) or right.kind in ("seq",):
            return UNKNOWN
        self.flag(node, "maybe_tensor_arithmetic", "warn", f"cannot tell whether the operands of {OPERATOR_SYMBOLS.get(op, op)} are numbers or tensors; keep tensor math in the kernel")
        return UNKNOWN

    def e_UnaryOp(self, e: ast.UnaryOp) -> Val:
        value = self.expr(e.operand)
        if isinstance(e.op, ast.Not):
            return SCALAR
        if value.kind == "tensor":
            self.compute(e, f"the unary operator {OPERATOR_SYMBOLS.get(type(e.op).__name__, '')} on a tensor")
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
