"""Expressions on the forward path: the kind each expression evaluates to (names and
closures, containers, comprehensions, attributes of tensors, nn layers and the file's own
classes, subscripts) and the torch compute and pointer- or shape-keyed caches that operators,
comparisons and lookups reveal (mixed into the scope analysis of forward.py)."""

from __future__ import annotations

import ast

from npu_pool.antihack.torch_names import (
    COMPUTE_BUILTINS,
    NEUTRAL_BUILTINS,
    NN_SCALAR_ATTRS,
    TENSOR_ATTRS_SCALAR,
    TENSOR_ATTRS_TENSOR,
)
from npu_pool.antihack.values import (
    NONE,
    OPERATOR_SYMBOLS,
    SCALAR,
    TENSOR,
    UNKNOWN,
    FunctionInfo,
    Val,
    join,
    join_all,
)


class ExprRules:
    """The expressions on the forward path (mixed into the scope analysis of forward.py)."""

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
