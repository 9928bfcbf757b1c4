"""The structure of a ModelNew file for the forward-path analysis: its functions (nested
ones and decorators included), classes and their members, the module body, and the entry
points that `nn.Module.__call__` reaches; then the analysis itself (forward.py)."""

from __future__ import annotations

import ast

from npu_pool.antihack.findings import Finding
from npu_pool.antihack.forward import ForwardChecker
from npu_pool.antihack.values import (
    MODULE_SCOPE,
    SCALAR,
    TENSOR,
    ClassInfo,
    FunctionInfo,
    Program,
    Val,
)


def check_forward(tree: ast.Module, namespaces: set[str], aliases: dict[str, set[str]]) -> list[Finding]:
    program = Program(tree, {}, namespaces)
    program.aliases = {name: sorted(paths)[0] for name, paths in aliases.items()}
    _register(program, tree)
    model_new = program.classes.get("ModelNew")
    if model_new is None:
        alias = program.module_env.get("ModelNew")
        if alias is None or alias.kind != "class":
            return [Finding(rule="structure", severity="reject", line=None, message="no class ModelNew(nn.Module) is defined")]
        model_new = program.classes[alias.ref]
    findings = _check_bases(program, model_new, set()) + _rebound_definitions(tree)
    # nn.Module.__call__ reaches forward through these; overriding any of them replaces forward
    entry_names = ("forward", "__call__", "_call_impl", "_wrapped_call_impl", "__getattr__", "__getattribute__")
    entries = [fid for name in entry_names if (fid := _method(program, model_new, name))]
    if not entries or not _method(program, model_new, "forward"):
        findings.append(Finding(rule="structure", severity="reject", line=model_new.node.lineno, message="ModelNew defines no forward method"))
        return findings
    for fid in entries:
        node = program.functions[fid].node
        plain = {"torch.no_grad", "torch.inference_mode"}
        if isinstance(node, ast.Lambda) or any(dotted_path(d, program) not in plain for d in node.decorator_list):
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


def dotted_path(node: ast.expr, program: Program) -> str:
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
    info = FunctionInfo(node=node, owner=owner, scope=scope, decorators=[dotted_path(d, program) for d in node.decorator_list])
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
            path = dotted_path(base, program)
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
                info.methods.pop(target.id, None)  # a later assignment replaces an earlier def
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
    path = dotted_path(value, program) if isinstance(value, (ast.Name, ast.Attribute)) else ""
    if path and path.split(".")[0] in set(program.aliases.values()) | {p.split(".")[0] for p in program.aliases.values()}:
        info.attrs[name] = Val("path", path)
    elif isinstance(value, (ast.Name, ast.Attribute)) and path:
        info.attrs[name] = program.module_env.get(path, Val("unknown"))
    else:
        info.attrs[name] = Val("unknown")


def _rebound_definitions(tree: ast.Module) -> list[Finding]:
    """A module-level function or class later rebound to something else would run instead of
    the definition the analysis followed (`helper = torch.relu` after `def helper`).
    Re-wrapping it (`k = triton.autotune(...)(k)`) is a decoration and stays allowed."""
    defined: set[str] = set()
    findings = []
    for stmt in _flatten_module(tree.body):
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if stmt.name in defined:  # e.g. two branches of an if: the analysis sees only one
                findings.append(Finding(rule="structure", severity="reject", line=stmt.lineno,
                                        message=f"{stmt.name} is defined twice; give each function and class one definition"))
            defined.add(stmt.name)
            continue
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] if isinstance(stmt, (ast.AnnAssign, ast.AugAssign)) else []
        for target in targets:
            if not isinstance(target, ast.Name) or target.id not in defined:
                continue
            value = getattr(stmt, "value", None)
            wraps_itself = isinstance(value, ast.Call) and any(
                isinstance(n, ast.Name) and n.id == target.id for arg in value.args for n in ast.walk(arg))
            if not wraps_itself:
                findings.append(Finding(rule="structure", severity="reject", line=stmt.lineno,
                                        message=f"{target.id} is defined and then rebound; give each function and class one definition"))
    return findings
