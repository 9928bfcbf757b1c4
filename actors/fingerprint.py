"""A candidate's identity up to comments, white space and the names it declares itself.

A small model asked again after a failure often answers the same kernel with a comment added
or a variable renamed; verifying it again costs a build and tells nothing new, so the episode
treats such code as a repeat (issue 27). Everything that can change what the code computes
stays in the fingerprint: numbers, operators, string literals, calls to names the code does
not declare (expf and exp, _mm256_add_ps and _mm256_mul_ps differ), preprocessor lines,
member names, and the order of everything.

C and C++ (kernel format, CUDA, Ascend C): comments dropped, tokens joined by one space,
names declared in the code (`T name`, `T* name`, `#define NAME`) renamed by first appearance.
Python (ModelNew): the syntax tree unparsed without comments and docstrings, names the module
binds renamed, and the C++ source strings it holds normalised as C++.
"""

from __future__ import annotations

import ast
import hashlib
import re

_TOKEN = re.compile(r"""
    (?P<comment>//[^\n]*|/\*.*?\*/)
  | (?P<string>"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*')
  | (?P<directive>^[ \t]*\#[^\n]*(?:\\\n[^\n]*)*)
  | (?P<number>(?:\d+\.?\d*|\.\d+)(?:[eEpP][+-]?\d+)?[\w.]*)
  | (?P<name>[A-Za-z_]\w*)
  | (?P<op>->|::|<<=|>>=|\+\+|--|<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%&|^!~<>=]=?|[()\[\]{};,.?:\#])
  | (?P<space>[ \t\r\f\v]*\n|[ \t\r\f\v]+)
  | (?P<other>.)
""", re.VERBOSE | re.DOTALL | re.MULTILINE)

# Words whose meaning is fixed: never renamed even where they look declared.
_KEYWORDS = frozenset("""
alignas alignof asm auto bool break case catch char char16_t char32_t class const constexpr const_cast continue
decltype default delete do double dynamic_cast else enum explicit export extern false float for friend goto if
inline int long mutable namespace new noexcept nullptr operator private protected public register
reinterpret_cast return short signed sizeof static static_assert static_cast struct switch template this
thread_local throw true try typedef typeid typename union unsigned using virtual void volatile wchar_t while
restrict __restrict __restrict__ __global__ __device__ __host__ __shared__ __constant__ __aicore__ __gm__
half int8_t int16_t int32_t int64_t uint8_t uint16_t uint32_t uint64_t size_t ptrdiff_t std kernel main
""".split())
# A name right after one of these is a use, not a declaration.
_NOT_DECLARING = frozenset("return else case new delete sizeof goto throw typedef using namespace".split())
_QUALIFIERS = frozenset("const volatile restrict __restrict __restrict__ __gm__ unsigned signed long short".split())


def _tokens(code: str) -> list[tuple[str, str]]:
    out = []
    for match in _TOKEN.finditer(code):
        kind = match.lastgroup or "other"
        if kind in ("comment", "space"):
            continue
        text = match.group()
        if kind == "directive":
            text = re.sub(r"//[^\n]*|/\*.*?\*/", " ", text, flags=re.DOTALL)
            text = " ".join(text.replace("\\\n", " ").split())
        out.append((kind, text))
    return out


_TYPE_WORDS = frozenset("void char short int long float double bool auto signed unsigned half size_t ptrdiff_t".split())
_MARKS = frozenset(("*", "&", "&&"))


def _is_type_word(text: str) -> bool:
    return text in _TYPE_WORDS or text.endswith("_t")


def _declared(tokens: list[tuple[str, str]]) -> set[str]:
    """Names the code declares itself: right after a type word or another name (`float x`,
    `MyType y`: two names in a row only occur in declarations), after a pointer or reference mark
    that follows a type word (`const float* __restrict__ x`), and `#define NAME`. `a * b` is not
    a declaration of b: a name the code only uses keeps its spelling (it may be a library's)."""
    names: set[str] = set()
    for pos, (kind, text) in enumerate(tokens):
        if kind == "directive":
            match = re.match(r"#\s*define\s+([A-Za-z_]\w*)", text)
            if match:
                names.add(match.group(1))
            continue
        if kind != "name" or text in _KEYWORDS or (pos > 0 and tokens[pos - 1][1] in (".", "->", "::")):
            continue
        back, marked = pos - 1, False
        while back >= 0 and (tokens[back][1] in _MARKS or tokens[back][1] in _QUALIFIERS):
            marked = marked or tokens[back][1] in _MARKS
            back -= 1
        if back < 0 or tokens[back][0] != "name" or tokens[back][1] in _NOT_DECLARING:
            continue
        prev = tokens[back][1]
        if _is_type_word(prev) or (not marked and (prev not in _KEYWORDS or prev in ("struct", "class", "enum"))):
            names.add(text)
    return names


def normalise_c(code: str) -> str:
    """C/C++ source without comments and layout, its own names renamed in order of appearance."""
    tokens = _tokens(code)
    declared = _declared(tokens)
    renamed: dict[str, str] = {}
    out = []
    for pos, (kind, text) in enumerate(tokens):
        if kind == "name" and text in declared and not (pos > 0 and tokens[pos - 1][1] in (".", "->", "::")):
            text = renamed.setdefault(text, f"_v{len(renamed)}")
        elif kind == "directive":
            text = re.sub(r"[A-Za-z_]\w*", lambda m: (renamed.setdefault(m.group(), f"_v{len(renamed)}")
                                                    if m.group() in declared else m.group()), text)
        out.append(text)
    return " ".join(out)


_PROTECTED_PY = frozenset({"ModelNew", "Model", "forward", "__init__", "get_inputs", "get_init_inputs", "self",
                           "kernel"})


def _drop_docstring(node: ast.Module | ast.FunctionDef | ast.ClassDef) -> None:
    """A docstring is a comment (a body left empty gets `pass`, so it still unparses)."""
    first = node.body[0] if node.body else None
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        node.body = node.body[1:] or [ast.Pass()]


class _PyRenamer(ast.NodeTransformer):
    def __init__(self, bound: set[str]):
        self.bound = bound
        self.renamed: dict[str, str] = {}

    def name(self, name: str) -> str:
        if name not in self.bound or name in _PROTECTED_PY:
            return name
        return self.renamed.setdefault(name, f"_v{len(self.renamed)}")

    def visit_Name(self, node: ast.Name) -> ast.AST:
        node.id = self.name(node.id)
        return node

    def visit_arg(self, node: ast.arg) -> ast.AST:
        node.arg = self.name(node.arg)
        node.annotation = None
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        node.name = self.name(node.name)
        _drop_docstring(node)
        self.generic_visit(node)
        return node

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.AST:
        node.name = self.name(node.name)
        _drop_docstring(node)
        self.generic_visit(node)
        return node

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        if isinstance(node.value, str) and "{" in node.value and ";" in node.value:
            node.value = normalise_c(node.value)  # C++ source handed to load_inline
        return node


def normalise_python(tree: ast.Module) -> str:
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bound.add(node.id)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
    _drop_docstring(tree)
    return ast.unparse(_PyRenamer(bound).visit(tree))


def normalised(code: str) -> str:
    """The form two attempts are compared in: Python when it parses as Python, else C/C++."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return normalise_c(code)
    return normalise_python(tree)


def code_fingerprint(code: str) -> str:
    """Identity of a candidate up to comments, white space and its own names."""
    return hashlib.sha256(normalised(code).encode()).hexdigest()[:16]
