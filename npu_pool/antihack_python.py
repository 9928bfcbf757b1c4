"""Anti-hack rules for a `ModelNew` file: rules that hold anywhere in the file (module code
runs inside the harness at import), the structure of `ModelNew`, the C/C++/CUDA strings
handed to `load_inline`, and the forward-path analysis (antihack_forward)."""

from __future__ import annotations

import ast
import re

from npu_pool.antihack import Finding
from npu_pool.antihack_forward import (
    MODULE_SCOPE,
    SCALAR,
    TENSOR,
    ClassInfo,
    ForwardChecker,
    FunctionInfo,
    Program,
    Val,
)
from npu_pool.antihack_source import check_source
from npu_pool.antihack_torch import (
    FORBIDDEN_ATTRIBUTES,
    FORBIDDEN_BUILTINS,
    FORBIDDEN_PATHS,
    KNOWN_MODULES,
    TENSOR_BASES,
    WARNED_PATHS,
    lookup_prefix,
)

_LOAD_INLINE = "torch.utils.cpp_extension.load_inline"
_LOAD = "torch.utils.cpp_extension.load"
_TORCH_LIBRARY = re.compile(r"\bTORCH_LIBRARY(?:_FRAGMENT|_IMPL)?\s*\(\s*(\w+)")
_BAD_FLAGS = ("-wrapper", "-fplugin", "-specs", "--wrap", "-Wl,--wrap", "-Wl,-init", "-Wl,-fini", "--defsym", "-B",
              "-include", "-imacros", "--include", "-iprefix", "-isysroot", "--sysroot")


def check_python(source: str) -> list[Finding]:
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        return [Finding(rule="syntax_error", severity="reject", message=f"the file does not parse: {exc.msg}", line=exc.lineno)]
    aliases = _collect_aliases(tree)
    findings: list[Finding] = []
    findings += _ModuleRules(aliases, tree).run()
    sources, namespaces, source_findings = _kernel_sources(tree, aliases)
    findings += source_findings
    for language, text, first_line, label in sources:
        for finding in check_source(text, language):
            line = first_line + (finding.line or 1) - 1
            findings.append(finding.model_copy(update={"line": line, "message": f"in {label}: {finding.message}"}))
    findings += _check_forward(tree, namespaces, aliases)
    return findings


# --- aliases and path resolution -----------------------------------------------------------


def _collect_aliases(tree: ast.Module) -> dict[str, set[str]]:
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


def _paths(node: ast.AST, aliases: dict[str, set[str]]) -> set[str]:
    """The dotted paths a Name/Attribute chain can stand for (empty when not an import)."""
    if isinstance(node, ast.Name):
        return set(aliases.get(node.id, ()))
    if isinstance(node, ast.Attribute):
        return {f"{base}.{node.attr}" for base in _paths(node.value, aliases)}
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr" and len(node.args) >= 2:
        if isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str):
            return {f"{base}.{node.args[1].value}" for base in _paths(node.args[0], aliases)}
    return set()


class _ModuleRules(ast.NodeVisitor):
    """Rules that hold anywhere in the file, whatever calls what."""

    def __init__(self, aliases: dict[str, set[str]], tree: ast.Module):
        self.aliases = aliases
        self.findings: list[Finding] = []
        self.tree = tree
        self.defined = {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))}
        self.defined |= {t.id for n in ast.walk(tree) if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}

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
            for path in _paths(node, self.aliases):
                if path != node.id:
                    self.check_path(node, path)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        for path in _paths(node, self.aliases):
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
        if any(p.endswith(("pathlib.Path.open", ".open")) for p in _paths(func, self.aliases)) or (
            isinstance(func, ast.Attribute) and func.attr in ("open", "write") and not _paths(func, self.aliases)):
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
        if name in ("setattr", "delattr") and (_paths(target, self.aliases) or not constant):
            severity = "reject" if _paths(target, self.aliases) else "warn"
            self.add(node, "module_patch", severity, f"{name}() on a module or with a computed name patches code the harness relies on")
        elif name in ("getattr", "hasattr") and not constant:
            severity = "reject" if _paths(target, self.aliases) else "warn"
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
        elif isinstance(target, ast.Attribute) and _paths(target.value, self.aliases):
            path = next(iter(_paths(target, self.aliases)))
            self.add(target, "module_patch", "reject", f"assigning {path} patches a library the harness relies on (timers, torch, builtins)")

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for base in node.bases:
            if _paths(base, self.aliases) & TENSOR_BASES:
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


# --- the C/C++/CUDA sources handed to load_inline ---------------------------------------------


def _kernel_sources(tree: ast.Module, aliases: dict[str, set[str]]) -> tuple[list[tuple[str, str, int, str]], set[str], list[Finding]]:
    """(language, text, first line, label) per source string, op namespaces, findings."""
    bindings: dict[str, list[ast.expr]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    bindings.setdefault(target.id, []).append(node.value)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            bindings.setdefault(node.target.id, []).append(node.value)
    sources: list[tuple[str, str, int, str]] = []
    namespaces: set[str] = set()
    findings: list[Finding] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        paths = _paths(node.func, aliases)
        if _LOAD in paths:
            findings.append(Finding(rule="file_access", severity="reject", line=node.lineno,
                                    message="cpp_extension.load() compiles files outside the candidate; pass the source to load_inline"))
            continue
        if _LOAD_INLINE not in paths:
            continue
        arguments = {k.arg: k.value for k in node.keywords if k.arg}
        for index, key in enumerate(("name", "cpp_sources", "cuda_sources")):
            if len(node.args) > index:
                arguments.setdefault(key, node.args[index])
        name = arguments.get("name")
        if isinstance(name, ast.Constant) and isinstance(name.value, str):
            namespaces.add(name.value)
        for key, language in (("cpp_sources", "cpp"), ("cuda_sources", "cuda"), ("sycl_sources", "cpp")):
            value = arguments.get(key)
            if value is None or (isinstance(value, ast.Constant) and value.value is None):
                continue
            pieces = _strings(value, bindings, set())
            if pieces is None:
                findings.append(Finding(rule="opaque_source", severity="reject", line=node.lineno,
                                        message=f"{key} must be string literals (or names bound to literals) so the gate can read them"))
                continue
            for text, line in pieces:
                sources.append((language, text, line, key))
                namespaces.update(_TORCH_LIBRARY.findall(text))
        for key in ("extra_cflags", "extra_cuda_cflags", "extra_ldflags", "extra_include_paths"):
            if key in arguments:
                findings += _check_flags(key, arguments[key], bindings, node.lineno)
        if "build_directory" in arguments:
            findings.append(Finding(rule="file_access", severity="warn", line=node.lineno,
                                    message="build_directory is chosen by the harness; leave it out"))
    return sources, namespaces, findings


def _strings(node: ast.expr, bindings: dict[str, list[ast.expr]], seen: set[str]) -> list[tuple[str, int]] | None:
    """The literal strings an expression is built from, with their first line; None if opaque."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [(node.value, node.lineno)]
    if isinstance(node, ast.JoinedStr):
        text = "".join(v.value if isinstance(v, ast.Constant) else "0" for v in node.values)
        return [(text, node.lineno)]
    if isinstance(node, (ast.List, ast.Tuple)):
        out: list[tuple[str, int]] = []
        for element in node.elts:
            piece = _strings(element, bindings, seen)
            if piece is None:
                return None
            out += piece
        return out
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _strings(node.left, bindings, seen), _strings(node.right, bindings, seen)
        return None if left is None or right is None else left + right
    if isinstance(node, ast.Name) and node.id in bindings and node.id not in seen:
        out = []
        for value in bindings[node.id]:
            piece = _strings(value, bindings, seen | {node.id})
            if piece is None:
                return None
            out += piece
        return out
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in ("strip", "lstrip", "rstrip", "dedent", "format") and not node.args[1:]:
            inner = func.value if func.attr != "dedent" else (node.args[0] if node.args else None)
            return None if inner is None else _strings(inner, bindings, seen)
        if isinstance(func, ast.Name) and func.id == "dedent" and node.args:
            return _strings(node.args[0], bindings, seen)
        if isinstance(func, ast.Attribute) and func.attr == "join" and node.args:
            return _strings(node.args[0], bindings, seen)
    return None


def _check_flags(key: str, node: ast.expr, bindings: dict[str, list[ast.expr]], line: int) -> list[Finding]:
    pieces = _strings(node, bindings, set())
    if pieces is None:
        return [Finding(rule="opaque_source", severity="reject", line=line, message=f"{key} must be literal strings")]
    findings = []
    for flag, _ in pieces:
        if key == "extra_include_paths":
            findings.append(Finding(rule="file_access", severity="warn", line=line, message=f"extra include path {flag!r}: use only toolkit headers"))
        elif flag.startswith("@") or any(flag.startswith(bad) or bad in flag for bad in _BAD_FLAGS):
            findings.append(Finding(rule="compiler_flags", severity="reject", line=line, message=f"compiler flag {flag!r} can run or inject code; remove it"))
        elif flag.startswith("-D"):
            # a macro defined on the command line is checked like a #define in the source
            name, _, value = flag[2:].partition("=")
            for finding in check_source(f"#define {name} {value}\n", "cpp"):
                findings.append(finding.model_copy(update={"line": line, "message": f"in {key} {flag!r}: {finding.message}"}))
        elif key == "extra_ldflags" and flag.startswith("-l"):
            findings.append(Finding(rule="vendor_library", severity="warn", line=line, message=f"linking {flag!r}: the kernel should not need extra libraries"))
    return findings


# --- the forward path --------------------------------------------------------------------------


def _check_forward(tree: ast.Module, namespaces: set[str], aliases: dict[str, set[str]]) -> list[Finding]:
    program = Program(tree, {}, namespaces)
    program.aliases = {name: sorted(paths)[0] for name, paths in aliases.items()}
    _register(program, tree)
    model_new = program.classes.get("ModelNew")
    if model_new is None:
        alias = program.module_env.get("ModelNew")
        if alias is None or alias.kind != "class":
            return [Finding(rule="structure", severity="reject", line=None, message="no class ModelNew(nn.Module) is defined")]
        model_new = program.classes[alias.ref]
    findings = _check_bases(program, model_new, set())
    # nn.Module.__call__ reaches forward through these; overriding any of them replaces forward
    entry_names = ("forward", "__call__", "_call_impl", "_wrapped_call_impl", "__getattr__", "__getattribute__")
    entries = [fid for name in entry_names if (fid := _method(program, model_new, name))]
    if not entries or not _method(program, model_new, "forward"):
        findings.append(Finding(rule="structure", severity="reject", line=model_new.node.lineno, message="ModelNew defines no forward method"))
        return findings
    for fid in entries:
        node = program.functions[fid].node
        plain = {"torch.no_grad", "torch.inference_mode"}
        if isinstance(node, ast.Lambda) or any(_decorator_path(d, program) not in plain for d in node.decorator_list):
            findings.append(Finding(rule="structure", severity="reject", line=getattr(node, "lineno", None),
                                    message=f"{fid} must be a plain method (no property, decorator or lambda)"))
    _bind_entry_params(program, entries, model_new)
    checker = ForwardChecker(program)
    init = [MODULE_SCOPE] + [fid for fid, info in program.functions.items() if fid != MODULE_SCOPE and not isinstance(info.node, ast.Lambda)]
    return findings + checker.run(entries, init)


def _method(program: Program, cls: ClassInfo, name: str, seen: frozenset = frozenset()) -> str | None:
    if name in cls.methods:
        return cls.methods[name]
    for base in cls.bases:
        if base.kind == "class" and base.ref not in seen:
            found = _method(program, program.classes[base.ref], name, seen | {cls.node.name})
            if found:
                return found
    return None


def _check_bases(program: Program, cls: ClassInfo, seen: set[str]) -> list[Finding]:
    findings = []
    for base, node in zip(cls.bases, cls.node.bases, strict=False):
        if base.kind == "class" and base.ref not in seen:
            findings += _check_bases(program, program.classes[base.ref], seen | {cls.node.name})
        elif base.kind == "path" and base.ref in ("torch.nn.Module", "torch.nn.modules.module.Module", "object"):
            continue
        elif base.kind == "path" and base.ref.startswith("torch.autograd.Function") and cls.node.name != "ModelNew":
            continue
        else:
            shown = ast.unparse(node)
            findings.append(Finding(rule="structure", severity="reject", line=cls.node.lineno,
                                    message=f"{cls.node.name} derives from {shown}; ModelNew must derive from nn.Module and compute with your kernel"))
    return findings


def _bind_entry_params(program: Program, entries: list[str], model_new: ClassInfo) -> None:
    for fid in entries:
        spec = program.functions[fid].node.args
        positional = spec.posonlyargs + spec.args
        defaults = [None] * (len(positional) - len(spec.defaults)) + list(spec.defaults)
        table = program.params.setdefault(fid, {})
        for arg, default in list(zip(positional, defaults, strict=False))[1:]:
            annotation = ast.unparse(arg.annotation) if arg.annotation is not None else ""
            scalar = annotation in ("int", "float", "bool", "str") or (
                isinstance(default, ast.Constant) and not isinstance(default.value, type(None)))
            table[arg.arg] = SCALAR if scalar else TENSOR
        if spec.vararg:
            table[spec.vararg.arg] = Val("seq", elem=TENSOR)
    init = _method(program, model_new, "__init__")
    if init:
        spec = program.functions[init].node.args
        table = program.params.setdefault(init, {})
        for arg in (spec.posonlyargs + spec.args)[1:] + spec.kwonlyargs:
            table[arg.arg] = SCALAR


def _register(program: Program, tree: ast.Module) -> None:
    """Functions, classes and decorators of the file; the module body as MODULE_SCOPE."""
    env = program.module_env
    body = []
    for stmt in _flatten_module(tree.body):
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            info = _function(program, stmt, owner=None, scope=None, fid=stmt.name)
            env[stmt.name] = Val("triton", stmt.name) if any(d.startswith("triton") for d in info.decorators) else Val("func", stmt.name)
        elif isinstance(stmt, ast.ClassDef):
            env[stmt.name] = Val("class", stmt.name)
    for stmt in _flatten_module(tree.body):
        if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            body.append(stmt)
    for node in ast.walk(tree):  # classes nested in functions too, so their methods are followed
        if isinstance(node, ast.ClassDef):
            _class(program, node)
    module_fn = ast.FunctionDef(name=MODULE_SCOPE, args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[]),
                                body=body or [ast.Pass()], decorator_list=[], returns=None, type_params=[])
    program.functions[MODULE_SCOPE] = FunctionInfo(node=module_fn, owner=None, scope=None)


def _flatten_module(body: list[ast.stmt]) -> list[ast.stmt]:
    """Module statements, with those inside module-level if/try blocks pulled up."""
    out: list[ast.stmt] = []
    for stmt in body:
        if isinstance(stmt, ast.If):
            out += _flatten_module(stmt.body) + _flatten_module(stmt.orelse)
        elif isinstance(stmt, (ast.Try, ast.TryStar)):
            out += _flatten_module(stmt.body) + [s for h in stmt.handlers for s in _flatten_module(h.body)]
            out += _flatten_module(stmt.orelse) + _flatten_module(stmt.finalbody)
        else:
            out.append(stmt)
    return out


def _decorator_path(node: ast.expr, program: Program) -> str:
    target = node.func if isinstance(node, ast.Call) else node
    parts = []
    while isinstance(target, ast.Attribute):
        parts.append(target.attr)
        target = target.value
    if isinstance(target, ast.Name):
        root = program.aliases.get(target.id, target.id)
        return ".".join([root, *reversed(parts)])
    return ""


def _function(program: Program, node: ast.FunctionDef | ast.AsyncFunctionDef, owner: str | None, scope: str | None, fid: str) -> FunctionInfo:
    info = FunctionInfo(node=node, owner=owner, scope=scope, decorators=[_decorator_path(d, program) for d in node.decorator_list])
    program.functions[fid] = info
    for stmt in ast.walk(node):
        if stmt is not node and isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and _direct_child(node, stmt):
            _function(program, stmt, owner=None, scope=fid, fid=f"{fid}.{stmt.name}")
    return info


def _direct_child(parent: ast.AST, child: ast.AST) -> bool:
    """True when `child` is nested in `parent` with no other function or class in between."""
    stack = list(ast.iter_child_nodes(parent))
    while stack:
        node = stack.pop()
        if node is child:
            return True
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            stack.extend(ast.iter_child_nodes(node))
    return False


def _class(program: Program, node: ast.ClassDef) -> None:
    bases = []
    for base in node.bases:
        if isinstance(base, ast.Name) and program.module_env.get(base.id, Val("none")).kind == "class":
            bases.append(Val("class", base.id))
        elif isinstance(base, ast.Name) and base.id == "Model":
            bases.append(Val("model"))
        else:
            path = _decorator_path(base, program)
            bases.append(Val("path", path) if path else Val("unknown"))
    info = ClassInfo(node=node, bases=bases, methods={})
    program.classes[node.name] = info
    for stmt in node.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            fid = f"{node.name}.{stmt.name}"
            _function(program, stmt, owner=node.name, scope=None, fid=fid)
            info.methods[stmt.name] = fid
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
            targets = [t for t in (stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]) if isinstance(t, ast.Name)]
            for target in targets:
                _class_attribute(program, info, target.id, stmt.value)


def _class_attribute(program: Program, info: ClassInfo, name: str, value: ast.expr) -> None:
    """A name bound in a class body: a method (function, lambda) or an attribute."""
    if isinstance(value, ast.Lambda):
        fid = f"{info.node.name}.{name}"
        program.functions[fid] = FunctionInfo(node=value, owner=info.node.name, scope=None)
        info.methods[name] = fid
        return
    if isinstance(value, ast.Name) and program.module_env.get(value.id, Val("none")).kind == "func":
        info.methods[name] = program.module_env[value.id].ref
        return
    if isinstance(value, ast.Constant):
        info.attrs[name] = SCALAR
        return
    path = _decorator_path(value, program) if isinstance(value, (ast.Name, ast.Attribute)) else ""
    if path and path.split(".")[0] in set(program.aliases.values()) | {p.split(".")[0] for p in program.aliases.values()}:
        info.attrs[name] = Val("path", path)
    elif isinstance(value, (ast.Name, ast.Attribute)) and path:
        info.attrs[name] = program.module_env.get(path, Val("unknown"))
    else:
        info.attrs[name] = Val("unknown")
