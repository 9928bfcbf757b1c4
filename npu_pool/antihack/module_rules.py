"""Anti-hack rules that hold anywhere in a ModelNew file, whatever calls what: module code
runs inside the harness when the candidate is imported, so imports, patching, processes,
threads, the network, the file system, introspection and tensor subclasses are judged
wherever they appear. Names are resolved through the file's imports (`paths_of`)."""

from __future__ import annotations

import ast

from npu_pool.antihack.findings import Finding
from npu_pool.antihack.torch_names import (
    FORBIDDEN_ATTRIBUTES,
    FORBIDDEN_BUILTINS,
    FORBIDDEN_PATHS,
    KNOWN_MODULES,
    TENSOR_BASES,
    WARNED_PATHS,
    lookup_prefix,
)


def collect_aliases(tree: ast.Module) -> dict[str, set[str]]:
    """Every name bound by an import anywhere in the file -> the dotted paths it may mean."""
    aliases: dict[str, set[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    aliases.setdefault(alias.asname, set()).add(alias.name)
                else:
                    root = alias.name.split(".")[0]
                    aliases.setdefault(root, set()).add(root)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                if alias.name != "*":
                    aliases.setdefault(alias.asname or alias.name, set()).add(f"{node.module}.{alias.name}")
    return aliases


def paths_of(node: ast.AST, aliases: dict[str, set[str]]) -> set[str]:
    """The dotted paths a Name/Attribute chain can stand for (empty when not an import)."""
    if isinstance(node, ast.Name):
        return set(aliases.get(node.id, ()))
    if isinstance(node, ast.Attribute):
        return {f"{base}.{node.attr}" for base in paths_of(node.value, aliases)}
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr" and len(node.args) >= 2:
        if isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str):
            return {f"{base}.{node.args[1].value}" for base in paths_of(node.args[0], aliases)}
    return set()


# Methods nn.Module.__call__ runs; assigning any of them on an instance or class swaps forward.
_CALL_PATH_METHODS = {"forward", "__call__", "_call_impl", "_wrapped_call_impl", "__getattr__", "__getattribute__"}


class _ModuleRules(ast.NodeVisitor):
    """Rules that hold anywhere in the file, whatever calls what."""

    def __init__(self, aliases: dict[str, set[str]], tree: ast.Module):
        self.aliases = aliases
        self.findings: list[Finding] = []
        self.tree = tree
        self.defined = {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))}
        self.defined |= {t.id for n in ast.walk(tree) if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
        self.classes = {n.name for n in ast.walk(tree) if isinstance(n, ast.ClassDef)}

    def run(self) -> list[Finding]:
        self.visit(self.tree)
        return self.findings

    def add(self, node: ast.AST, rule: str, severity: str, message: str) -> None:
        self.findings.append(Finding(rule=rule, severity=severity, message=message, line=getattr(node, "lineno", None)))

    def check_path(self, node: ast.AST, path: str) -> None:
        hit = lookup_prefix(FORBIDDEN_PATHS, path)
        if hit:
            self.add(node, hit[0], "reject", f"{path}: {hit[1]}")
            return
        hit = lookup_prefix(WARNED_PATHS, path)
        if hit:
            self.add(node, hit[0], "warn", f"{path}: {hit[1]}")
        elif path.startswith("torch._") and not path.startswith("torch.__"):
            self.add(node, "torch_internals", "warn", f"{path}: private torch internals are unusual in a candidate")

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self.check_path(node, alias.name)
            self.check_module(node, alias.name)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            self.add(node, "reference_model", "reject", "relative imports reach files next to the candidate (the task); import only libraries")
            return
        module = node.module or ""
        self.check_path(node, module)
        self.check_module(node, module)
        for alias in node.names:
            if alias.name == "*":
                severity = "reject" if module.split(".")[0] in ("torch", "torch_npu") else "warn"
                self.add(node, "star_import", severity, f"from {module} import * hides which names are used; import them by name")
            elif alias.name == "Model":
                self.add(node, "reference_model", "reject", "importing Model: the reference must not be used; write the kernel")
            else:
                self.check_path(node, f"{module}.{alias.name}")

    def check_module(self, node: ast.AST, module: str) -> None:
        if module.split(".")[0] not in KNOWN_MODULES and not lookup_prefix(FORBIDDEN_PATHS, module):
            self.add(node, "unknown_import", "reject", f"import of {module}: candidates may import torch, torch_npu, triton, "
                     "numpy, einops and plain standard-library helpers (the task's module is off limits)")

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load):
            if node.id in FORBIDDEN_BUILTINS and node.id not in self.defined and node.id not in self.aliases:
                rule, message = FORBIDDEN_BUILTINS[node.id]
                self.add(node, rule, "reject", f"{node.id}: {message}")
            if node.id == "Model":
                self.add(node, "reference_model", "reject", "uses the reference Model (subclassing, calling or wrapping it); write the kernel")
            if node.id in ("get_inputs", "get_init_inputs") and node.id not in self.defined:
                self.add(node, "reference_model", "reject", f"{node.id} belongs to the task; a candidate must not call the task's code")
            for path in paths_of(node, self.aliases):
                if path != node.id:
                    self.check_path(node, path)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        for path in paths_of(node, self.aliases):
            self.check_path(node, path)
        if node.attr == "Model":
            self.add(node, "reference_model", "reject", ".Model: the reference must not be used; write the kernel")
        if node.attr in FORBIDDEN_ATTRIBUTES:
            rule = FORBIDDEN_ATTRIBUTES[node.attr]
            self.add(node, rule, "reject", f".{node.attr}: {_ATTRIBUTE_MESSAGES[rule]}")
        if node.attr == "mkdir":
            self.add(node, "file_access", "warn", ".mkdir(): create no directories; load_inline manages its build folder")
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Name) and func.id not in self.defined:
            if func.id == "open":
                self.check_open(node)
            elif func.id in ("getattr", "setattr", "delattr", "hasattr"):
                self.check_reflection(node, func.id)
            elif func.id == "type" and len(node.args) == 3:
                self.add(node, "tensor_subclass", "reject", "type(name, bases, dict) builds classes dynamically; define classes plainly")
        if any(p.endswith(("pathlib.Path.open", ".open")) for p in paths_of(func, self.aliases)) or (
            isinstance(func, ast.Attribute) and func.attr in ("open", "write") and not paths_of(func, self.aliases)):
            if isinstance(func, ast.Attribute) and func.attr == "open":
                self.check_open(node, mode_index=0)
        self.generic_visit(node)

    def check_open(self, node: ast.Call, mode_index: int = 1) -> None:
        mode_node = node.args[mode_index] if len(node.args) > mode_index else next(
            (k.value for k in node.keywords if k.arg == "mode"), None)
        mode = "r" if mode_node is None else (mode_node.value if isinstance(mode_node, ast.Constant) and isinstance(mode_node.value, str) else None)
        if mode is None or set(mode) & set("wax+"):
            self.add(node, "file_access", "reject", "opening files for writing is not allowed in a candidate")
        else:
            self.add(node, "file_access", "warn", "reading files is unusual in a candidate; keep everything in the source")

    def check_reflection(self, node: ast.Call, name: str) -> None:
        if len(node.args) < 2:
            return
        target, key = node.args[0], node.args[1]
        constant = isinstance(key, ast.Constant) and isinstance(key.value, str)
        if name in ("setattr", "delattr") and constant and self.patches_a_class(target, key.value):
            self.add(node, "class_patch", "reject", f"{name}() replaces code the analysis followed; define methods in the class body")
        elif name in ("setattr", "delattr") and (paths_of(target, self.aliases) or not constant):
            severity = "reject" if paths_of(target, self.aliases) else "warn"
            self.add(node, "module_patch", severity, f"{name}() on a module or with a computed name patches code the harness relies on")
        elif name in ("getattr", "hasattr") and not constant:
            severity = "reject" if paths_of(target, self.aliases) else "warn"
            self.add(node, "dynamic_code", severity, f"{name}() with a computed name hides what is used; use plain attribute access")

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            self.check_store(target)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self.check_store(node.target)
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self.check_store(node.target)
        self.generic_visit(node)

    def visit_Delete(self, node: ast.Delete) -> None:
        for target in node.targets:
            self.check_store(target)
        self.generic_visit(node)

    def check_store(self, target: ast.AST) -> None:
        if isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                self.check_store(element)
        elif isinstance(target, ast.Attribute) and paths_of(target.value, self.aliases):
            path = next(iter(paths_of(target, self.aliases)))
            self.add(target, "module_patch", "reject", f"assigning {path} patches a library the harness relies on (timers, torch, builtins)")
        elif isinstance(target, ast.Attribute) and self.patches_a_class(target.value, target.attr):
            self.add(target, "class_patch", "reject", f"assigning .{target.attr} replaces code the analysis followed; define methods in the class body")

    def patches_a_class(self, base: ast.AST, attr: str) -> bool:
        """`ModelNew.forward = ...`, `type(self).x = ...`, `self.forward = ...` (an instance
        attribute shadows the method nn.Module.__call__ looks up)."""
        if isinstance(base, ast.Name) and base.id in self.classes:
            return True
        if isinstance(base, ast.Call) and isinstance(base.func, ast.Name) and base.func.id == "type":
            return True
        return attr in _CALL_PATH_METHODS

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for base in node.bases:
            if paths_of(base, self.aliases) & TENSOR_BASES:
                self.add(node, "tensor_subclass", "reject", f"class {node.name} subclasses torch.Tensor; return plain tensors")
        if any(k.arg == "metaclass" for k in node.keywords):
            self.add(node, "metaclass", "reject", f"class {node.name} uses a metaclass (it can replace the class or its calls); define plain classes")
        for decorator in node.decorator_list:
            if not (isinstance(decorator, ast.Name) and decorator.id == "dataclass"):
                self.add(node, "class_decorator", "reject", f"class {node.name} is decorated (a decorator can replace the class); define plain classes")
        if node.name == "Model":
            self.add(node, "reference_model", "warn", "the candidate defines its own Model; define only ModelNew and helpers")
        self.generic_visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        if node.name in ("__torch_function__", "__torch_dispatch__"):
            self.add(node, "tensor_subclass", "reject", f"{node.name} overrides torch dispatch; not allowed")
        self.generic_visit(node)

    visit_AsyncFunctionDef = visit_FunctionDef


_ATTRIBUTE_MESSAGES = {
    "introspection": "reaching into interpreter internals is not allowed in a candidate",
    "module_patch": "patching attributes of objects the harness uses is not allowed",
    "tensor_subclass": "tensor subclasses and dispatch overrides are not allowed; return plain tensors",
    "dynamic_code": "dynamic code tricks are not allowed in a candidate",
    "file_access": "file system writes are not allowed in a candidate",
    "hook": "hooks change what runs around forward (the reference too); not allowed",
}


def check_module_rules(tree: ast.Module, aliases: dict[str, set[str]]) -> list[Finding]:
    return _ModuleRules(aliases, tree).run()
