"""Operators on torch::Tensor values in extension C++ (`a + b`, `x > 0`, `-x` inside a function
that takes tensors): ATen computes these, so they are torch compute in a kernel source. Called by
source.py for C++/CUDA sources that use torch.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from npu_pool.antihack.findings import Finding
from npu_pool.antihack.lexing import _line

_TOKEN = re.compile(r"[A-Za-z_]\w*|\d[\w.]*|::|->|<<=|>>=|<<|>>|[-+*/%^&|<>=!]=|&&|\|\||[-+*/%^&|<>=!~?:;,.(){}\[\]]")
_BINARY = {"+", "-", "*", "/", "%", "^", "|", "&", "<<", ">>", "<", ">", "<=", ">=", "==", "!=", "&&", "||",
           "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>="}
_TENSOR_FUNCTION = re.compile(r"\(([^()]*\bTensor\b[^()]*)\)\s*(?:const\s*)?(?:->\s*[\w:<>, ]+)?\s*\{")
_TENSOR_PARAM = re.compile(r"^(?:const\s+)?(?:(?:torch|at)\s*::\s*)?Tensor\s*&?\s*(\w+)$")
_TENSOR_LOCAL = re.compile(r"\b(?:torch|at)\s*::\s*Tensor\s+(\w+)|\bauto\s+(\w+)\s*=\s*(?:torch|at)\s*::\s*\w+\s*\(")
_METADATA = {"size", "numel", "stride", "dim", "item", "data_ptr", "scalar_type", "options", "device", "sizes",
             "strides", "is_contiguous", "is_cuda", "defined", "element_size", "get_device", "nbytes",
             "storage_offset", "ndimension", "dtype", "const_data_ptr", "mutable_data_ptr"}


def check_tensor_operators(code: str) -> Iterator[Finding]:
    """`a + b`, `x > 0`, `-x` on torch::Tensor values inside functions that take tensors:
    ATen computes these; the kernel must."""
    for match in _TENSOR_FUNCTION.finditer(code):
        params = [p.strip() for p in match.group(1).split(",")]
        names = {m.group(1) for p in params if (m := _TENSOR_PARAM.match(re.sub(r"\s+", " ", p)))}
        start = match.end()
        depth, end = 1, start
        while end < len(code) and depth:
            depth += {"{": 1, "}": -1}.get(code[end], 0)
            end += 1
        body = code[start:end]
        names |= {m.group(1) or m.group(2) for m in _TENSOR_LOCAL.finditer(body)}
        names |= _derived_tensors(body, names)
        tokens = [(m.group(0), m.start()) for m in _TOKEN.finditer(body)]
        for i, (token, offset) in enumerate(tokens):
            if token not in names:
                continue
            after = tokens[i + 1][0] if i + 1 < len(tokens) else ""
            before = tokens[i - 1][0] if i > 0 else ""
            before2 = tokens[i - 2][0] if i > 1 else ""
            if after in (".", "->", "[", "(", "::"):
                continue
            operand_before = bool(re.match(r"[\w)\]]", before2))
            binary_after = after in _BINARY
            binary_before = before in _BINARY and operand_before
            unary_before = before in ("-", "~", "!") and not operand_before
            if binary_after or binary_before or unary_before:
                op = after if binary_after else before
                yield Finding(rule="torch_compute", severity="reject",
                              message=f"the operator {op} on the tensor '{token}' is ATen compute; compute in your own kernel",
                              line=_line(code, start + offset))
                break  # one finding per function is enough to act on


def _derived_tensors(body: str, names: set[str]) -> set[str]:
    """Locals assigned from a tensor by a method that returns a tensor (`auto y = x.contiguous()`)."""
    derived: set[str] = set()
    for _ in range(3):
        known = names | derived
        for m in re.finditer(r"\bauto\s*&?\s+(\w+)\s*=\s*(\w+)\s*\.\s*(\w+)", body):
            if m.group(2) in known and m.group(3) not in _METADATA:
                derived.add(m.group(1))
    return derived
