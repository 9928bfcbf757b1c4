"""The forward-path check: what `ModelNew.forward` (and everything it calls in the file)
does with tensors, found by a small abstract interpretation over the AST.

Every value gets a kind: a tensor, a plain number (sizes, strides, pointers), a torch path
(`torch.relu`), a compiled extension, a Triton kernel, a function or class of the file, or
unknown. Torch compute on the path (functions, methods, operators, `torch.ops.aten`,
nn layers, builtins such as `sum` over a tensor) is rejected; arithmetic whose operands
cannot be proven to be numbers is flagged for review. Types flow into helpers through
their call sites and into methods through `self` attributes, iterated to a fixed point.

This module holds the driver (`ForwardChecker`) and the statements of one function body;
expressions are in exprs.py and calls in calls.py.
"""

from __future__ import annotations

import ast

from npu_pool.antihack.calls import CallRules
from npu_pool.antihack.exprs import ExprRules
from npu_pool.antihack.findings import Finding
from npu_pool.antihack.values import (
    MODULE_SCOPE,
    NONE,
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


class _Scope(ExprRules, CallRules):
    """One analysis of one function body: its statements here, its expressions and calls from
    the mixins."""

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
