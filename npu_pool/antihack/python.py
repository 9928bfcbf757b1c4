"""Anti-hack rules for a `ModelNew` file: rules that hold anywhere in the file (module code
runs inside the harness at import), the structure of `ModelNew`, the C/C++/CUDA strings
handed to `load_inline` (here), and the forward path (program.py, forward.py)."""

from __future__ import annotations

import ast
import re

from npu_pool.antihack.findings import Finding
from npu_pool.antihack.module_rules import check_module_rules, collect_aliases, paths_of
from npu_pool.antihack.program import check_forward
from npu_pool.antihack.source import check_source

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
    aliases = collect_aliases(tree)
    findings: list[Finding] = []
    findings += check_module_rules(tree, aliases)
    sources, namespaces, source_findings = _kernel_sources(tree, aliases)
    findings += source_findings
    for language, text, first_line, label in sources:
        for finding in check_source(text, language):
            line = first_line + (finding.line or 1) - 1
            findings.append(finding.model_copy(update={"line": line, "message": f"in {label}: {finding.message}"}))
    findings += check_forward(tree, namespaces, aliases)
    return findings


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
        paths = paths_of(node.func, aliases)
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
        elif flag.startswith("-D") and any(c in flag for c in "()#"):
            # the sources are expanded without the command line's macros: one that could wrap a
            # name or a call there (function-like, a parenthesis, a paste) must be in the source
            findings.append(Finding(rule="compiler_flags", severity="reject", line=line,
                                    message=f"compiler flag {flag!r} defines a macro with parentheses or ##; define it in the source"))
        elif flag.startswith("-D"):
            # a macro defined on the command line is checked like a #define in the source
            name, _, value = flag[2:].partition("=")
            for finding in check_source(f"#define {name} {value}\n", "cpp"):
                findings.append(finding.model_copy(update={"line": line, "message": f"in {key} {flag!r}: {finding.message}"}))
        elif key == "extra_ldflags" and flag.startswith("-l"):
            findings.append(Finding(rule="vendor_library", severity="warn", line=line, message=f"linking {flag!r}: the kernel should not need extra libraries"))
    return findings
