"""A standalone KernelBench `ModelNew` file for a kernel-format candidate (cpu and cuda backends).

The file needs only torch: `ModelNew` is the task's reference `Model` class renamed, with its
forward replaced (the same constructor, so the same parameters from the same seed, as
KernelBench's evaluation and `evokernel verify` expect; the anti-hack gate rejects a candidate
that subclasses or defines `Model`), the kernel source exactly as verified, a small pybind
launcher that passes data pointers, scalars and dimensions in the order of the signature
EvoKernel derived, and a `forward` that allocates the outputs and calls it. It is built with
`torch.utils.cpp_extension.load_inline` at import, like any KernelBench candidate (ctypes
would keep it from passing the anti-hack gate): as C++ with OpenMP for the cpu format, as
CUDA (`cuda_sources`, nvcc) for the cuda format, whose launcher also passes torch's current
stream and checks the launch. Output shapes follow the inputs' shapes by the rule the task's
probes showed (`OutputDim`), so it runs at KernelBench's own sizes too.
"""

from __future__ import annotations

import ast
import hashlib
import re

from pydantic import BaseModel

from npu_pool.backends import cuda_kernel
from npu_pool.tasks.signature import KernelArg, KernelSignature

DROPIN_BACKENDS = ("cpu", "cuda")  # the kernel formats a drop-in can be written for (see kernel_files)
CFLAGS = ["-O3", "-march=native", "-fopenmp", "-std=c++17"]  # npu_pool.backends.cpu.KERNEL_CFLAGS, less -shared/-fPIC
PRELUDE_INCLUDES = ["cstdint", "cstddef", "cmath", "cstring", "algorithm", "numeric", "limits", "omp.h"]
# nvcc flags after torch's own (load_inline adds the architecture of the GPUs it sees, or
# TORCH_CUDA_ARCH_LIST's): the harness's cuda_kernel.NVCC_FLAGS less what makes a library and
# the C++ standard (torch's headers set theirs), and torch's -D__CUDA_NO_HALF_OPERATORS__ and
# kin undone: the harness builds without them, so a verified kernel may use __half operators.
CUDA_CFLAGS = ["-O3", "-lineinfo", "-U__CUDA_NO_HALF_OPERATORS__", "-U__CUDA_NO_HALF_CONVERSIONS__",
               "-U__CUDA_NO_BFLOAT16_CONVERSIONS__", "-U__CUDA_NO_HALF2_OPERATORS__"]
# c10's, not ATen/cuda/CUDAContext.h: that one also wants the cuBLAS, cuSPARSE and cuSOLVER
# headers, which a toolkit with only the compiler lacks.
CUDA_INCLUDES = ["c10/cuda/CUDAStream.h", "c10/cuda/CUDAGuard.h", "c10/cuda/CUDAException.h"]
# What an Ascend C kernel needs instead of a drop-in (npu, npu-twin).
ASCENDC_NOTE = ("an Ascend C kernel builds only with CANN (its ascendc_library CMake function) and runs through "
                "torch_npu, so no drop-in ModelNew is written: the source is kept as verified; on an Ascend "
                "machine `evokernel verify --backend npu --format kernel TASK.py SOURCE` builds and checks it "
                "(docs/accelerator_backends.md, 'Moving a kernel from the twin to an NPU')")
_DROPPED_FUNCTIONS = {"get_inputs", "get_init_inputs"}
_HEADER_IMPORTS = {"import os", "import torch", "import torch.nn as nn", "from torch.utils.cpp_extension import load_inline"}
# Spare build names a drop-in tries when a build folder holds torch's lock (see _UNLOCKED_NAME).
SPARE_BUILD_NAMES = 8
# A build killed midway (kill -9, a limit, a crash) leaves torch's `lock` in its folder, and every
# later load_inline of that source would wait on it for good. The drop-in cannot tell a dead
# build's lock from a live one's without file access it should not have, so it builds under the
# first spare name whose folder holds no lock: a dead build costs one build, a live one (two
# imports at once) a second build beside it; later imports load whichever finished.
_UNLOCKED_NAME = f'''

def _unlocked_build_name(name):
    """name, or name_r1, name_r2, ... where a build killed midway left torch's lock (load_inline
    would wait on it for good)."""
    from torch.utils.cpp_extension import _get_build_directory

    root = os.path.dirname(_get_build_directory(name, False))
    for spare in range({SPARE_BUILD_NAMES}):
        candidate = name if spare == 0 else f"{{name}}_r{{spare}}"
        if not os.path.exists(os.path.join(root, candidate, "lock")):
            return candidate
    return name
'''


class OutputDim(BaseModel):
    """One dimension of an output: that of a tensor argument (`arg`, `dim`), or a constant."""

    arg: str | None = None
    dim: int | None = None
    value: int | None = None

    def expression(self) -> str:
        return f"{self.arg}.shape[{self.dim}]" if self.arg is not None else str(self.value)


class DropInError(Exception):
    """No drop-in can be written for this kernel (backend, signature or reference not supported)."""


def _python_string(text: str) -> str:
    """`text` as a readable Python literal (a raw triple-quoted string where that is exact)."""
    for quote in ("'''", '"""'):
        if quote not in text and not text.endswith(("\\", quote[0])):
            return f"r{quote}{text}{quote}"
    return repr(text)


def reference_module_text(task_source: str) -> str:
    """The task file without its Model class, get_inputs/get_init_inputs and a `__main__` block:
    its imports, constants and helpers, as written."""
    tree = ast.parse(task_source)
    kept = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name in _DROPPED_FUNCTIONS:
            continue
        if isinstance(node, ast.ClassDef) and node.name == "Model":
            continue
        if isinstance(node, ast.If) and "__main__" in ast.unparse(node.test):
            continue
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and node is tree.body[0]:
            continue  # the task's docstring: the drop-in has its own
        text = ast.get_source_segment(task_source, node) or ast.unparse(node)
        if text in _HEADER_IMPORTS:
            continue
        block = isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        kept.append(("\n\n" if block else "") + text + ("\n\n" if block else ""))
    return "\n".join(kept).strip() + "\n"


class _RenameModel(ast.NodeTransformer):
    def visit_Name(self, node: ast.Name) -> ast.Name:
        return ast.Name(id="ModelNew", ctx=node.ctx) if node.id == "Model" else node


def modelnew_class(task_source: str, forward: str, init_store: str) -> str:
    """The reference's Model class as `ModelNew` (the same constructor, so the same parameters
    from the same seed), its forward replaced by `forward` and `init_store` appended to __init__."""
    for node in ast.parse(task_source).body:
        if isinstance(node, ast.ClassDef) and node.name == "Model":
            cls = _RenameModel().visit(node)
            cls.name = "ModelNew"
            new_forward = ast.parse(forward).body[0]
            cls.body = [new_forward if isinstance(item, ast.FunctionDef) and item.name == "forward" else item
                        for item in cls.body]
            for item in cls.body:
                if isinstance(item, ast.FunctionDef) and item.name == "__init__":
                    item.body.append(ast.parse(init_store).body[0])
            return ast.unparse(ast.fix_missing_locations(cls))
    raise DropInError("the reference defines no class Model")


def _method_args(task_source: str, method: str) -> ast.arguments:
    for node in ast.walk(ast.parse(task_source)):
        if isinstance(node, ast.ClassDef) and node.name == "Model":
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == method:
                    return item.args
    raise DropInError(f"the reference defines no Model.{method}")


def _params_text(args: ast.arguments) -> tuple[str, list[str], list[str]]:
    """A method's parameter list (annotations dropped), and the names it binds after `self`:
    positional ones and keyword-only ones."""
    copy = ast.arguments(posonlyargs=[], args=list(args.posonlyargs) + list(args.args), vararg=args.vararg,
                         kwonlyargs=args.kwonlyargs, kw_defaults=args.kw_defaults, kwarg=args.kwarg,
                         defaults=args.defaults)
    for arg in [*copy.args, *copy.kwonlyargs, copy.vararg, copy.kwarg]:
        if arg is not None:
            arg.annotation = None
    text = ast.unparse(copy)
    return text, [a.arg for a in copy.args[1:]], [a.arg for a in copy.kwonlyargs]


def _c_pointer(arg: KernelArg) -> str:
    return f"static_cast<{arg.ctype}>({arg.name}.data_ptr())"


def launcher_source(signature: KernelSignature, backend: str = "cpu") -> str:
    """The pybind function: tensors in, the extern "C" entry point called with their pointers.
    For cuda: on the first tensor's device and torch's current stream, launch errors raised."""
    if backend == "cuda":
        signature = cuda_kernel.cuda_signature(signature)
    values = ", ".join(_c_pointer(a) if a.is_tensor else a.name for a in signature.args)
    head = f"{launcher_declaration(signature).removesuffix(';')} {{\n"
    if backend != "cuda":
        return f"{head}    {signature.function}({values});\n}}\n"
    tensors = [a for a in signature.args if a.is_tensor]
    checks = "".join(f'    TORCH_CHECK({a.name}.is_cuda(), "{a.name} must be a CUDA tensor");\n' for a in tensors)
    guard = f"    const c10::cuda::CUDAGuard device_guard({tensors[0].name}.device());\n" if tensors else ""
    return (f"{head}{checks}{guard}    {signature.function}({values}, c10::cuda::getCurrentCUDAStream());\n"
            f"    C10_CUDA_KERNEL_LAUNCH_CHECK();\n}}\n")


def launcher_declaration(signature: KernelSignature) -> str:
    """`void evokernel_launch(torch::Tensor x, ..., int64_t x_d0);` (load_inline binds it)."""
    params = ", ".join(f"torch::Tensor {a.name}" if a.is_tensor else f"{a.ctype} {a.name}" for a in signature.args)
    return f"void evokernel_launch({params});"


def _parameter_expression(source: str) -> str:
    """`self.linear.weight` for a parameter or buffer path (getattr where a part is no identifier)."""
    expression = "self"
    for part in source.split("."):
        expression = f"{expression}.{part}" if part.isidentifier() else f"getattr({expression}, {part!r})"
    return expression


def _forward_body(signature: KernelSignature, output_dims: list[list[OutputDim]], init_names: list[str]) -> list[str]:
    lines: list[str] = []
    tensors = [a for a in signature.args if a.role in ("input", "parameter")]
    device = tensors[0].name + ".device" if tensors else '"cpu"'
    for arg in tensors:
        value = arg.source if arg.role == "input" else _parameter_expression(arg.source or arg.name)
        lines.append(f"{arg.name} = {value}.detach().contiguous()")
    for i, arg in enumerate(signature.by_role("output")):
        shape = ", ".join(d.expression() for d in output_dims[i])
        shape = f"({shape},)" if len(output_dims[i]) == 1 else f"({shape})"
        lines.append(f"{arg.name} = torch.empty({shape}, dtype=torch.{arg.dtype}, device={device})")
    call: list[str] = []
    for arg in signature.args:
        if arg.is_tensor:
            call.append(arg.name)
        elif arg.role == "size":
            call.append(f"{arg.source}.shape[{arg.index}]")
        else:  # a scalar: a forward argument or a constructor argument, maybe one element of a tuple
            if arg.source in signature.forward_args:
                value = arg.source
            elif arg.source in init_names:
                value = f"self.evokernel_init[{arg.source!r}]"
            else:
                value = repr(signature.init_args[arg.source])  # reference's init takes *args: the verified value
            if arg.index is not None:
                value = f"{value}[{arg.index}]"
            call.append(f"{'float' if arg.ctype == 'double' else 'int'}({value})")
    lines.append(f"_extension.evokernel_launch({', '.join(call)})")
    outputs = [a.name for a in signature.by_role("output")]
    lines.append(f"return {outputs[0]}" if len(outputs) == 1 else f"return ({', '.join(outputs)},)")
    return lines


def no_dropin_for(backend: str) -> str | None:
    """Why the backend's kernel format gets no drop-in (None: it gets one)."""
    if backend in ("npu", "npu-twin"):
        return ASCENDC_NOTE
    if backend not in DROPIN_BACKENDS:
        return (f"no drop-in ModelNew is written for the {backend} backend's kernel format "
                f"(only {', '.join(DROPIN_BACKENDS)}): the kernel source is there as verified")
    return None


def render_dropin(*, task: str, which: str, code: str, signature: KernelSignature, reference_source: str,
                  output_dims: list[list[OutputDim]], backend: str, note: str) -> str:
    """The drop-in file's text. `note`: one line on where the kernel came from."""
    if (why_not := no_dropin_for(backend)) is not None:
        raise DropInError(why_not)
    if len(output_dims) != len(signature.by_role("output")):
        raise DropInError("the output shapes of the reference are not known")
    _, positional, keyword = _params_text(_method_args(reference_source, "__init__"))
    forward_params, _, _ = _params_text(_method_args(reference_source, "forward"))
    init_names = positional + keyword
    build, needs = (_cuda_build, "torch built with CUDA, the CUDA toolkit (nvcc) and a GPU") if backend == "cuda" \
        else (_cpu_build, "torch and a C++ compiler with OpenMP")
    body = "\n".join(f"    {line}" for line in _forward_body(signature, output_dims, init_names))
    store = ", ".join(f"{n!r}: {n}" for n in init_names)
    model_class = modelnew_class(reference_source, f"def forward({forward_params}):\n{body}\n",
                                 f"self.evokernel_init = {{{store}}}")
    return f'''"""EvoKernel's {which} kernel for {task}, as a KernelBench ModelNew ({note}).

Standalone: needs {needs}, nothing of EvoKernel. The kernel
below (KERNEL_SOURCE, exactly as EvoKernel verified it) is built with load_inline and called
through `evokernel_launch` with the entry point's arguments: data pointers, scalars, then
every dimension of every tensor. ModelNew is the task's reference Model with its forward
replaced: the same constructor, so the same parameters from the same seed.
"""

import os

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

{reference_module_text(reference_source)}
KERNEL_SOURCE = {_python_string(code)}
{_UNLOCKED_NAME}
{build(task, code, signature)}

{model_class}
'''


def _extension_name(task: str, code: str, declaration: str) -> str:
    """Named by what is compiled: the same kernel as best and first is built once."""
    digest = hashlib.sha256("\0".join([code, declaration, task]).encode()).hexdigest()[:10]
    return re.sub(r"\W", "_", f"evokernel_{task}_{digest}")


def _cpu_build(task: str, code: str, signature: KernelSignature) -> str:
    declaration = signature.declaration()
    includes = "".join(f"#include <{h}>\n" for h in PRELUDE_INCLUDES)
    return f'''
_PRELUDE = """#include <torch/extension.h>
{includes}{declaration}
"""

_LAUNCHER = """
{launcher_source(signature)}"""

_extension = load_inline(
    name=_unlocked_build_name({_extension_name(task, code, declaration)!r}),
    cpp_sources=[_PRELUDE + '#line 1 "kernel.cpp"\\n' + KERNEL_SOURCE + "\\n" + _LAUNCHER],
    functions=["evokernel_launch"],
    extra_cflags={CFLAGS!r},
    extra_ldflags=["-fopenmp"],
)
'''


def _cuda_build(task: str, code: str, signature: KernelSignature) -> str:
    """nvcc compiles the prelude (the harness's includes and the entry point's declaration with
    its stream), the kernel and the launcher; the C++ side only declares the launcher, which
    load_inline binds."""
    declaration = cuda_kernel.cuda_signature(signature).declaration(extra=[cuda_kernel.STREAM_PARAM])
    includes = "".join(f"#include <{h}>\n" for h in CUDA_INCLUDES)
    return f'''
_PRELUDE = """#include <torch/extension.h>
{includes}{cuda_kernel.KERNEL_PRELUDE}{declaration}
"""

_LAUNCHER = """
{launcher_source(signature, "cuda")}"""

_extension = load_inline(
    name=_unlocked_build_name({_extension_name(task, code, declaration)!r}),
    cpp_sources=[{launcher_declaration(signature)!r}],
    cuda_sources=[_PRELUDE + '#line 1 "{cuda_kernel.SOURCE_NAME}"\\n' + KERNEL_SOURCE + "\\n" + _LAUNCHER],
    functions=["evokernel_launch"],
    extra_cuda_cflags={CUDA_CFLAGS!r},
)
'''
