"""A kernel entry's signature as the prompt shows it, read back: what each argument is, and the
signature's shape, so that two tasks' kernels can be compared and one renamed into the other.

Every kernel format's signature is rendered by npu_pool (docs/contracts.md): the C and CUDA
formats as `extern "C" void kernel(const float* x, float* out, int64_t x_d0, ...)` with one
documentation comment per argument; the Ascend C format as a `struct KernelTiling { int64_t x_d0;
... }` then `extern "C" __global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR out, GM_ADDR
workspace, GM_ADDR tiling)`. A memory item keeps only that text (MemoryItem.task_signature), so
the text is what is read here, the same way for the task and for the item.

The signature's SHAPE is its arguments in order, each described without its name:
- a tensor by its role, element type and rank: `input float32[2]`, `output float32[1]` (role and
  element type from its documentation comment, else from the pointer's constness and C type;
  rank: the number of size arguments that name it);
- a size argument (`<tensor>_d<k>`, npu_pool/tasks/signature.py) by which tensor's which
  dimension: `size 0.1` (the first tensor's dimension 1);
- a scalar by its C type: `scalar int64_t`, `scalar double`;
- the arguments every kernel of a format has (`workspace`, `tiling`, `stream`, the tiling
  struct's `block_dim`) by their names;
and, for Ascend C, the KernelTiling fields after a `; tiling:` in the same words. Two
signatures of one shape differ only in their names, so a kernel written for one is a kernel for
the other once its names are replaced (`renaming`).
"""

from __future__ import annotations

import re
from functools import cache

from pydantic import BaseModel

FIXED_NAMES = ("workspace", "tiling", "stream", "block_dim")  # the same in every kernel of a format
_TENSOR_ROLES = ("input", "parameter", "output")
_DTYPES = {"float": "float32", "double": "float64", "_Float16": "float16", "__half": "float16", "half": "float16",
           "__bf16": "bfloat16", "__nv_bfloat16": "bfloat16", "bfloat16_t": "bfloat16", "int64_t": "int64",
           "int32_t": "int32", "int16_t": "int16", "int8_t": "int8", "uint8_t": "uint8", "bool": "bool"}
_DECLARATION = re.compile(r"^(?P<type>.*?)(?P<name>[A-Za-z_]\w*)\s*(?:\[\s*\w*\s*\])?$")
_SIZE_NAME = re.compile(r"^(?P<tensor>\w+)_d(?P<dim>\d+)$")
_FIELD = re.compile(r"^\s*(?P<type>[A-Za-z_][\w\s]*?[\w*])\s+(?P<name>[A-Za-z_]\w*)\s*;")


class SignatureArg(BaseModel):
    """One argument (or tiling field) of an entry: its name and what it is, without the name."""

    name: str | None
    ctype: str
    doc: str = ""
    what: str = ""  # the shape's word for it: 'input float32[2]', 'size 0.1', 'scalar double', 'tiling'


class EntrySignature(BaseModel):
    """An entry's name, its arguments in order, and (Ascend C) its KernelTiling fields in order."""

    function: str
    args: list[SignatureArg]
    fields: list[SignatureArg] = []

    @property
    def shape(self) -> str:
        shape = ", ".join(arg.what for arg in self.args)
        return f"{shape}; tiling: {', '.join(f.what for f in self.fields)}" if self.fields else shape

    def names(self) -> list[str | None]:
        return [self.function, *(a.name for a in self.args), *(f.name for f in self.fields)]


def blank_comments(text: str) -> str:
    """`text` with its comments replaced by spaces (every position kept), to find brackets in."""
    return re.sub(r"//[^\n]*|/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m.group()), text, flags=re.DOTALL)


def _closing(code: str, opening: int) -> int:
    depth = 0
    for i in range(opening, len(code)):
        depth += {"(": 1, ")": -1}.get(code[i], 0)
        if depth == 0:
            return i
    return -1


def _declarations(text: str) -> list[tuple[str, str]]:
    """(declaration, its documentation comment) per comma-separated piece of `text`; a `//`
    comment documents the last declaration on its line."""
    found: list[tuple[str, str]] = []
    for line in re.sub(r"/\*.*?\*/", " ", text, flags=re.DOTALL).splitlines():
        code, _, doc = line.partition("//")
        pieces = [" ".join(p.split()) for p in code.split(",") if p.strip()]
        found += [(piece, "") for piece in pieces]
        if pieces and doc.strip():
            found[-1] = (found[-1][0], doc.strip())
    return found


def _arg(declaration: str, doc: str) -> SignatureArg:
    matched = _DECLARATION.match(declaration)
    if matched is None or not matched.group("type").strip():  # a type without a name
        return SignatureArg(name=None, ctype=re.sub(r"\s*([*&])\s*", r"\1", declaration), doc=doc)
    ctype = re.sub(r"\s*([*&])\s*", r"\1", " ".join(matched.group("type").split()))
    return SignatureArg(name=matched.group("name"), ctype=ctype, doc=doc)


def _describe(args: list[SignatureArg], fields: list[SignatureArg]) -> None:
    """Fill in each argument's `what` (the module docstring's words)."""
    everything = args + fields
    tensors = [a for a in args if a.name not in FIXED_NAMES and ("*" in a.ctype or a.ctype == "GM_ADDR")]
    position = {a.name: i for i, a in enumerate(tensors)}
    ranks = dict.fromkeys(position, 0)
    for arg in everything:
        size = _SIZE_NAME.match(arg.name or "")
        if arg not in tensors and size and size.group("tensor") in position and "*" not in arg.ctype:
            ranks[size.group("tensor")] += 1
            arg.what = f"size {position[size.group('tensor')]}.{size.group('dim')}"
    for arg in everything:
        if arg.what:
            continue
        if arg.name in FIXED_NAMES:
            arg.what = arg.name
        elif arg in tensors:
            words = [w.strip() for w in arg.doc.split(",")]
            base = arg.ctype.removeprefix("const ").rstrip("*")
            role = words[0] if words[0] in _TENSOR_ROLES else ("input" if arg.ctype.startswith("const ") else "output")
            dtype = words[1].split()[0] if role == words[0] and len(words) > 1 and words[1] else _DTYPES.get(base, base)
            arg.what = f"{role} {dtype}[{ranks[arg.name]}]"
        elif arg.name is None:
            arg.what = f"unnamed {arg.ctype}"
        else:
            arg.what = f"scalar {arg.ctype}"


def _entry_span(code: str) -> tuple[re.Match, int] | None:
    """The entry's name match and the index of its closing `)` in comment-blanked `code` (its last
    `extern "C"` declaration, or its first function-like one), None without a closed one."""
    start = code.rfind('extern "C"')
    entry = re.compile(r"([A-Za-z_]\w*)\s*\(").search(code, max(start, 0))
    if entry is None:
        return None
    end = _closing(code, entry.end() - 1)
    return None if end < 0 else (entry, end)


def entry_declaration(text: str) -> str:
    """A rendered signature (a declaration, or since 2026-12-07 in Ascend C the definition to fill)
    as a declaration: everything up to its entry's closing `)`, then `;`. `text` as it is where no
    entry closes."""
    found = _entry_span(blank_comments(text))
    return text if found is None else text[:found[1] + 1] + ";"


@cache
def read_signature(text: str | None) -> EntrySignature | None:
    """The entry of a rendered signature (its last `extern "C"` declaration, or its first
    function-like declaration), None when there is none."""
    if not text:
        return None
    code = blank_comments(text)
    found = _entry_span(code)
    if found is None:
        return None
    entry, end = found
    args = [_arg(decl, doc) for decl, doc in _declarations(text[entry.end():end]) if decl != "void"]
    fields: list[SignatureArg] = []
    struct = re.search(r"struct\s+KernelTiling\s*\{", code)
    if struct is not None:
        body_end = code.find("}", struct.end())
        for line in text[struct.end():body_end].splitlines():
            matched = _FIELD.match(line.partition("//")[0])
            if matched:
                fields.append(SignatureArg(name=matched.group("name"), ctype=" ".join(matched.group("type").split()),
                                           doc=line.partition("//")[2].strip()))
    _describe(args, fields)
    return EntrySignature(function=entry.group(1), args=args, fields=fields)


def signature_shape(signature: str | None) -> str:
    """The shape of a rendered kernel signature (the module docstring); '' without one."""
    entry = read_signature(signature)
    return entry.shape if entry is not None else ""


class Renaming(BaseModel):
    """The names of one entry mapped to those of another of the same shape."""

    names: dict[str, str]  # function, arguments and tiling fields, in the same places
    fields: frozenset[str] = frozenset()  # the source's KernelTiling fields: also renamed as members (t.x_d0)


def renaming(source: str | None, target: str | None) -> Renaming | None:
    """How `source`'s entry is renamed into `target`'s, when both signatures have one shape; None
    when they do not (or either has no entry, or an argument without a name)."""
    a, b = read_signature(source), read_signature(target)
    if a is None or b is None or a.shape != b.shape:
        return None
    pairs = list(zip(a.names(), b.names(), strict=True))
    if any(old is None or new is None for old, new in pairs):
        return None
    return Renaming(names={old: new for old, new in pairs},  # type: ignore[misc]
                    fields=frozenset(f.name for f in a.fields if f.name))
