"""The abstract values of the forward-path analysis (forward.py) and the facts about
the file they refer to: its functions, classes and module-level bindings.

Every value gets a kind: a tensor, a plain number (sizes, strides, pointers), a torch path
(`torch.relu`), a compiled extension, a Triton kernel, a function or class of the file, or
unknown; `join` merges the kinds a name takes on different paths, tensors winning.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from npu_pool.antihack.torch_names import (
    ALLOC_FUNCTIONS,
    META_FUNCTIONS,
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


def join_all(values: list[Val]) -> Val:
    out = NONE
    for value in values:
        out = join(out, value)
    return out


OPERATOR_SYMBOLS = {
    "Add": "+", "Sub": "-", "Mult": "*", "Div": "/", "FloorDiv": "//", "Mod": "%", "Pow": "**",
    "MatMult": "@", "BitAnd": "&", "BitOr": "|", "BitXor": "^", "LShift": "<<", "RShift": ">>",
    "USub": "-", "UAdd": "+", "Invert": "~",
}
_POINTER_CALLS = {"data_ptr", "id", "hash", "_cdata", "untyped_storage", "storage", "__array_interface__", "_version"}
_SHAPE_NAMES = {"shape", "size", "numel", "stride"}


def mentions_pointer(node: ast.AST | None, tainted: set[str] | frozenset = frozenset()) -> bool:
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


def mentions_shape(node: ast.AST | None, tainted: set[str] | frozenset = frozenset()) -> bool:
    if node is None:
        return False
    return any((isinstance(sub, ast.Attribute) and sub.attr in _SHAPE_NAMES) or (isinstance(sub, ast.Name) and sub.id in tainted)
               for sub in ast.walk(node))


def const_str(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


_TORCH_NON_CALLABLES = {"Tensor", "Size", "device", "dtype", "finfo", "iinfo", "float32", "float", "float64", "double",
                        "float16", "half", "bfloat16", "int8", "int16", "int32", "int64", "int", "long", "bool", "uint8",
                        "complex64", "complex128", "contiguous_format", "channels_last", "preserve_format", "strided"}


def is_torch_callable(path: str) -> bool:
    """A torch function or class that computes when called (not dtypes, devices, types)."""
    parts = path.split(".")
    return parts[0] in ("torch", "torch_npu") and len(parts) > 1 and parts[-1] not in _TORCH_NON_CALLABLES and not (
        len(parts) == 2 and parts[1] in ALLOC_FUNCTIONS | VIEW_FUNCTIONS | META_FUNCTIONS) and parts[1] not in ("cuda", "npu", "backends", "utils")
