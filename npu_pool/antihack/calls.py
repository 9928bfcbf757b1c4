"""Calls on the forward path: which torch functions, tensor methods, builtins and library
functions are plumbing a kernel wrapper needs and which are compute, and how calls flow
into the file's own functions, classes and decorators."""

from __future__ import annotations

import ast

from npu_pool.antihack.torch_names import (
    ALLOC_FUNCTIONS,
    CAST_METHODS_LOW,
    CAST_METHODS_OTHER,
    COMPUTE_BUILTINS,
    DEVICE_MODULE_ALLOWED,
    DTYPES_LOW,
    DTYPES_OTHER,
    META_FUNCTIONS,
    NN_CONTAINER_CLASSES,
    TENSOR_METHODS_FORBIDDEN,
    TENSOR_METHODS_SCALAR,
    TENSOR_METHODS_TENSOR,
    TENSOR_METHODS_WARN,
    VIEW_FUNCTIONS,
)
from npu_pool.antihack.values import (
    NONE,
    SCALAR,
    TENSOR,
    UNKNOWN,
    Val,
    const_str,
    is_torch_callable,
    join_all,
)

_ARITH_DUNDERS = {
    "__add__", "__radd__", "__iadd__", "__sub__", "__rsub__", "__isub__", "__mul__", "__rmul__",
    "__imul__", "__truediv__", "__rtruediv__", "__itruediv__", "__floordiv__", "__mod__", "__pow__",
    "__rpow__", "__matmul__", "__rmatmul__", "__neg__", "__abs__", "__and__", "__or__", "__xor__",
    "__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__", "__invert__", "__getitem__", "__setitem__",
}


class CallRules:
    """The calls on the forward path (mixed into the scope analysis of forward.py)."""

    def e_Call(self, e: ast.Call) -> Val:
        if isinstance(e.func, ast.Name) and e.func.id == "getattr" and len(e.args) >= 2 and const_str(e.args[1]) is not None:
            base = self.expr(e.args[0])
            return self.attribute(e, base, const_str(e.args[1]))
        func = self.expr(e.func)
        args = [self.expr(a) for a in e.args if not isinstance(a, ast.Starred)]
        kwargs = {k.arg: self.expr(k.value) for k in e.keywords if k.arg}
        spread_values = [self.element(a, self.expr(a.value), quiet=True) for a in e.args if isinstance(a, ast.Starred)]
        spread_values += [self.element(k, self.expr(k.value), quiet=True) for k in e.keywords if not k.arg]
        spread = join_all(spread_values) if spread_values else None
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

        wrapped = False
        for name in local_decorators:
            # the decorator's wrapper runs instead of the function: follow what it returns
            decorator = self.p.module_env[name]
            self.c.bind_params(decorator.ref, [Val("func", func.ref)], {}, skip_first=False)
            self.c._enqueue(decorator.ref)
            wrapper = self.p.returns.get(decorator.ref, UNKNOWN)
            if wrapper.kind == "func" and wrapper.ref != func.ref:
                self.call_function(e, wrapper, args, kwargs, spread)
                wrapped = True
            elif wrapper.kind != "func":
                self.flag(e, "unresolved_call", "warn", f"cannot tell what the decorator {name} makes of this function")
        if wrapped:
            return UNKNOWN
        self.c.bind_params(func.ref, args, kwargs, skip_first=skip, spread=spread)
        self.c._enqueue(func.ref)
        returned = self.p.returns.get(func.ref, UNKNOWN)
        if returned.kind == "path" and is_torch_callable(returned.ref):
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
            if name in ("next", "iter") and args:
                # a generator function's call already stands for what it yields
                return args[0] if args[0].kind in ("path", "func", "nnmod", "ext") else self.element(e, args[0], quiet=True)
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
