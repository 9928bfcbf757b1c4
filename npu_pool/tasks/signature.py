"""The kernel-source format's entry point, derived from the reference (docs/contracts.md).

    extern "C" void kernel(<inputs>, <parameters>, <outputs>, <scalars>, <sizes>);

`derive_signature` builds it from the reference module, one set of inputs and the
reference's outputs; `KernelSignature.render_c()` is the text the LLM sees.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

import torch
from pydantic import BaseModel, ConfigDict

ArgRole = Literal["input", "parameter", "output", "scalar", "size"]

C_TYPES: dict[torch.dtype, str] = {
    torch.float32: "float",
    torch.float64: "double",
    torch.float16: "_Float16",
    torch.bfloat16: "__bf16",
    torch.int64: "int64_t",
    torch.int32: "int32_t",
    torch.int16: "int16_t",
    torch.int8: "int8_t",
    torch.uint8: "uint8_t",
    torch.bool: "bool",
}


class KernelArg(BaseModel):
    """One argument of the entry point."""

    model_config = ConfigDict(extra="forbid")

    name: str
    role: ArgRole
    ctype: str
    doc: str
    dtype: str | None = None  # torch dtype name, tensors only
    shape: list[int] | None = None  # tensors only, at the fitted sizes
    source: str | None = None  # forward arg / parameter name / init arg it comes from
    index: int | None = None  # element of a tuple scalar, or dimension of a tensor

    @property
    def is_tensor(self) -> bool:
        return self.role in ("input", "parameter", "output")


class KernelSignature(BaseModel):
    """The typed C ABI entry point of a task's kernel-source format."""

    model_config = ConfigDict(extra="forbid")

    function: str = "kernel"
    args: list[KernelArg]
    forward_args: list[str] = []  # names of forward's arguments, in order
    init_args: dict[str, Any] = {}  # constructor arguments by name (scalars the wrapper passes)

    def by_role(self, role: ArgRole) -> list[KernelArg]:
        return [a for a in self.args if a.role == role]

    def declaration(self, extra: Sequence[tuple[str, str, str]] = ()) -> str:
        """`extern "C" void kernel(...);` on one line (prepended to the compiled source).
        `extra`: (ctype, name, doc) parameters a backend appends (e.g. CUDA's stream)."""
        params = ", ".join([f"{a.ctype} {a.name}" for a in self.args] + [f"{ctype} {name}" for ctype, name, _ in extra])
        return f'extern "C" void {self.function}({params});'

    def render_c(self, header: Sequence[str] | None = None, extra: Sequence[tuple[str, str, str]] = ()) -> str:
        """The entry point with one documentation comment per argument, for the prompt;
        `header` replaces the CPU comment lines above it, `extra` as in `declaration`."""
        lines = list(header) if header is not None else [
            "// Write this function (C++17, OpenMP allowed). All tensors are contiguous, row-major.",
            "// Outputs are pre-allocated and filled with NaN: write every element.",
        ]
        lines.append(f'extern "C" void {self.function}(')
        params = [(f"{a.ctype} {a.name}", a.doc) for a in self.args] + [(f"{ctype} {name}", doc) for ctype, name, doc in extra]
        width = max((len(decl) for decl, _ in params), default=0) + 2
        for i, (decl, doc) in enumerate(params):
            sep = "," if i < len(params) - 1 else ""
            text = f"    {decl}{sep}"
            lines.append(f"{text:<{width + 5}}// {doc}")
        lines.append(");")
        return "\n".join(lines)

    def retyped(self, types: Mapping[str, str]) -> KernelSignature:
        """The same entry point with the C element types renamed (`types` maps a C type of
        C_TYPES to a backend's spelling, e.g. `_Float16` -> `__half` for CUDA); pointers keep
        their `const` and `*`."""
        def rename(ctype: str) -> str:
            const = ctype.startswith("const ")
            base = ctype.removeprefix("const ").rstrip("*").strip()
            stars = ctype[len(ctype.rstrip("*")):]
            return f"{'const ' if const else ''}{types.get(base, base)}{stars}"
        return self.model_copy(update={"args": [a.model_copy(update={"ctype": rename(a.ctype)}) for a in self.args]})


def _tensor_doc(kind: str, name: str, tensor: torch.Tensor) -> str:
    dims = " x ".join(f"{name}_d{i}" for i in range(tensor.dim())) or "scalar"
    shape = "x".join(str(s) for s in tensor.shape) or "()"
    return f"{kind}, {str(tensor.dtype).removeprefix('torch.')} [{dims}] (now {shape})"


def _scalar_args(name: str, value: Any, origin: str) -> list[KernelArg]:
    """int/bool -> int64_t, float -> double, tuples and lists expanded as name_0, name_1."""
    if isinstance(value, bool | int):
        return [KernelArg(name=name, role="scalar", ctype="int64_t", doc=f"{origin} {name} (now {int(value)})", source=name)]
    if isinstance(value, float):
        return [KernelArg(name=name, role="scalar", ctype="double", doc=f"{origin} {name} (now {value:g})", source=name)]
    if isinstance(value, list | tuple) and all(isinstance(v, bool | int | float) for v in value):
        out = []
        for i, v in enumerate(value):
            for arg in _scalar_args(f"{name}_{i}", v, f"{origin} {name}[{i}]"):
                out.append(arg.model_copy(update={"source": name, "index": i, "doc": arg.doc.replace(f" {name}_{i} ", " ")}))
        return out
    return []  # strings, None and objects have no C form: the wrapper does not pass them


def c_type(dtype: torch.dtype) -> str:
    if dtype not in C_TYPES:
        raise ValueError(f"no C type for {dtype}")
    return C_TYPES[dtype]


def derive_signature(
    reference: torch.nn.Module,
    forward_names: list[str],
    inputs: list[Any],
    outputs: list[torch.Tensor],
    init_names: list[str],
    init_values: list[Any],
) -> KernelSignature:
    """The entry point for a reference called with `inputs` giving `outputs`."""
    args: list[KernelArg] = []
    tensors: list[tuple[str, torch.Tensor]] = []
    scalars: list[KernelArg] = []
    for name, value in zip(forward_names, inputs, strict=False):
        if isinstance(value, torch.Tensor):
            args.append(KernelArg(name=name, role="input", ctype=f"const {c_type(value.dtype)}*",
                                  doc=_tensor_doc("input", name, value), dtype=str(value.dtype).removeprefix("torch."),
                                  shape=list(value.shape), source=name))
            tensors.append((name, value))
        else:
            scalars += _scalar_args(name, value, "forward argument")
    named = list(reference.named_parameters()) + list(reference.named_buffers())
    for pname, value in named:
        cname = pname.replace(".", "_")
        args.append(KernelArg(name=cname, role="parameter", ctype=f"const {c_type(value.dtype)}*",
                              doc=_tensor_doc("parameter", pname, value), dtype=str(value.dtype).removeprefix("torch."),
                              shape=list(value.shape), source=pname))
        tensors.append((cname, value))
    for i, value in enumerate(outputs):
        oname = "out" if len(outputs) == 1 else f"out{i}"
        args.append(KernelArg(name=oname, role="output", ctype=f"{c_type(value.dtype)}*",
                              doc=_tensor_doc("output", oname, value), dtype=str(value.dtype).removeprefix("torch."),
                              shape=list(value.shape), source=oname, index=i))
        tensors.append((oname, value))
    args += scalars
    for name, value in zip(init_names, init_values, strict=False):
        args += _scalar_args(name, value, "constructor argument")
    for name, value in tensors:
        for d, size in enumerate(value.shape):
            args.append(KernelArg(name=f"{name}_d{d}", role="size", ctype="int64_t",
                                  doc=f"size of dimension {d} of {name} (now {size})", source=name, index=d))
    init_scalars = {n: v for n, v in zip(init_names, init_values, strict=False) if _scalar_args(n, v, "")}
    _check_unique(args)
    return KernelSignature(args=args, forward_args=list(forward_names), init_args=init_scalars)


def _check_unique(args: list[KernelArg]) -> None:
    seen: set[str] = set()
    for arg in args:
        if arg.name in seen:
            raise ValueError(f"two kernel arguments would be called {arg.name!r}: rename the task's argument")
        seen.add(arg.name)
