"""The npu-twin backend's direct-launch form: a program that launches its own kernels.

A direct-launch program (MultiKernelBench's `ascendc_direct_launch` operators) is a torch_npu
C++ extension: host code computes the tiling and launches with
`kernel<<<blockDim, l2ctrl, stream>>>(args...)`, and `PYBIND11_MODULE` registers the operator
that the Python model calls. The twin runs it as published: the launches are rewritten for
g++ (CANN's compiler parses them; g++ cannot), the extension's host API comes from the twin's
twin_torch_ext.h, and a generated entry (`aclrtlaunch_<function>`, the ABI every npu-twin
library exports) calls the module's first operator with the task's tensors and scalars. So the
program's own tiling and block count decide the launch, as on a device.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from npu_pool.antihack.lexing import blank_comments_and_strings
from npu_pool.backends.base import KernelBuildError

if TYPE_CHECKING:
    from npu_pool.tasks.signature import KernelSignature

TORCH_MODULE = re.compile(r"^[ \t]*PYBIND11_MODULE\s*\(", re.MULTILINE)
# `name<<<` or `name<T, U><<<`: the launched kernel, then the launch configuration up to `>>>`
_LAUNCH = re.compile(r"(?P<callee>[A-Za-z_][\w:]*(?:\s*<[^<>;(){}]*>)?)\s*<<<(?P<config>[^;]*?)>>>\s*\(")
# CANN's kernel launch projects: ACLRT_LAUNCH_KERNEL(kernel)(blockDim, stream, args...)
_ACLRT_LAUNCH = re.compile(r"\bACLRT_LAUNCH_KERNEL\s*\(\s*(?P<callee>\w+)\s*\)\s*\(")
_GENERATED_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"]aclrtlaunch_\w+\.h[>"][^\n]*$', re.MULTILINE)
_TORCH_TYPES = {"float32": "torch::kFloat32", "float16": "torch::kFloat16", "bfloat16": "torch::kBFloat16",
                "int32": "torch::kInt32", "int64": "torch::kInt64", "int16": "torch::kInt16", "int8": "torch::kInt8",
                "uint8": "torch::kUInt8", "bool": "torch::kBool"}


def is_direct_program(source: str) -> bool:
    """Whether the candidate is a direct-launch program (a torch extension module of its own)."""
    return TORCH_MODULE.search(source) is not None


def refuse_stray_launch(source: str) -> None:
    """A `<<<...>>>` launch outside the direct-launch form names the form it needs (g++ would
    only say "expected primary-expression before '<<' token")."""
    for number, line in enumerate(blank_comments_and_strings(source)[1].splitlines(), 1):
        if "<<<" in line or "ACLRT_LAUNCH_KERNEL" in line:
            raise KernelBuildError(
                f"kernel.cpp:{number}: a kernel launch (<<<...>>>, ACLRT_LAUNCH_KERNEL) is host code: in the kernel "
                "format the harness launches the "
                "entry; a program that launches its own kernels is the direct-launch form (a torch extension with "
                "PYBIND11_MODULE; docs/ascendc_twin.md)")


def _closing_paren(text: str, start: int) -> int:
    """Index of the `)` matching the `(` at `start`."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return i
    raise KernelBuildError("a <<<...>>> launch's argument list is not closed")


def _top_level_split(text: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for ch in text:
        depth += ch in "(<[{"
        depth -= ch in ")>]}"
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    return [*parts, current]


def _rewrite(source: str, pattern: re.Pattern[str], launch) -> str:
    """Each match of `pattern` (ending at the `(` of its arguments) through the matching `)`
    replaced by `launch(match, argument text)`, found outside comments and strings."""
    code = blank_comments_and_strings(source)[1]  # same offsets as source
    out, pos = [], 0
    for m in pattern.finditer(code):
        if m.start() < pos:
            continue
        close_at = _closing_paren(code, m.end() - 1)
        out += [source[pos:m.start()], launch(m, source[m.end():close_at])]
        pos = close_at + 1
    out.append(source[pos:])
    return "".join(out)


def rewrite_launches(source: str) -> str:
    """Each `kernel<<<blocks, l2ctrl, stream>>>(args)`, and each
    `ACLRT_LAUNCH_KERNEL(kernel)(blocks, stream, args)` of a kernel launch project, becomes
    `::evk_twin::DirectLaunch(blocks, [&]() { kernel(args); })`, line for line (the kernel's line
    numbers stay those of the published file); the generated `aclrtlaunch_<kernel>.h` includes
    become empty lines (the kernel is in the unit)."""

    def chevrons(m: re.Match, args: str) -> str:
        config_text = source_now[m.start("config"):m.end("config")]
        blocks = _top_level_split(config_text)[0].strip()
        if not blocks:
            raise KernelBuildError(f"a <<<...>>> launch of {m.group('callee')} names no block count")
        newlines = "\n" * config_text.count("\n")  # keep the following lines where they were
        return f"::evk_twin::DirectLaunch({blocks}, [&]() {{ {m.group('callee')}({args}); }}){newlines}"

    def aclrt(m: re.Match, args: str) -> str:
        parts = _top_level_split(args)
        if len(parts) < 2 or not parts[0].strip():
            raise KernelBuildError(f"ACLRT_LAUNCH_KERNEL({m.group('callee')}) takes the block count and the stream first")
        # the generated launcher takes void* for GM_ADDR: each argument converts as it would
        kernel_args = ", ".join(f"::evk_twin::launch_arg({a.strip()})" for a in parts[2:])
        newlines = "\n" * ",".join(parts[:2]).count("\n")
        return f"::evk_twin::DirectLaunch({parts[0].strip()}, [&]() {{ {m.group('callee')}({kernel_args}); }}){newlines}"

    source_now = _GENERATED_INCLUDE.sub("", source)
    source_now = _rewrite(source_now, _ACLRT_LAUNCH, aclrt)
    return _rewrite(source_now, _LAUNCH, chevrons)


def direct_glue(signature: KernelSignature) -> str:
    """The library's entry for a direct-launch program: `aclrtlaunch_<function>` (the ABI the
    backend's wrapper calls) reads the task's shapes and scalars from KernelTiling and runs the
    module's first operator on the task's tensors (inputs, then outputs)."""
    from npu_pool.backends.ascendc import tiling_fields

    fields = tiling_fields(signature)
    tensors = [a for a in signature.args if a.is_tensor]
    ordered = [a for a in tensors if a.role != "output"] + [a for a in tensors if a.role == "output"]

    def tensor(arg) -> str:
        dims = sorted((f for f, _ in fields if f.role == "size" and f.source == arg.name), key=lambda f: f.index or 0)
        sizes = ", ".join(f"t.{f.name}" for f in dims)
        return (f"torch::Tensor::borrowed({arg.name}, std::vector<int64_t>{{{sizes}}}, "
                f"{_TORCH_TYPES.get(arg.dtype or 'float32', 'torch::kFloat32')})")

    outputs = [a for a in tensors if a.role == "output"]
    if len(outputs) != 1:
        raise KernelBuildError("the direct-launch form needs a task with exactly one output")
    params = ", ".join(f"void* {a.name}" for a in tensors)
    lines = [f"    call.tensors.push_back({tensor(a)});" for a in ordered]
    scalars = [f"static_cast<double>(t.{f.name})" for f, _ in fields if f.role == "scalar"]
    return (
        '\n#line 1 "direct_glue.cpp"\n'
        f'extern "C" uint32_t aclrtlaunch_{signature.function}(uint32_t blockDim, void* stream, {params}, '
        "void* workspace, void* tiling) {\n"
        "    (void)blockDim; (void)stream; (void)workspace;  // the program chooses its blocks and stream\n"
        "    KernelTiling t;\n    std::memcpy(&t, tiling, sizeof t);\n"
        "    evk_twin::torch_ext::Call call;\n" + "\n".join(lines) + "\n"
        f"    call.scalars = {{{', '.join(scalars)}}};\n"
        f"    return evk_twin::run_direct_program(std::move(call), {tensor(outputs[0])});\n}}\n"
    )
