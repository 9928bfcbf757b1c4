"""The Ascend C kernel-source format of the npu backend, and its CANN build.

A kernel is an Ascend C entry

    extern "C" __global__ __aicore__ void kernel(GM_ADDR <tensor>..., GM_ADDR workspace, GM_ADDR tiling);

with one global-memory address per tensor (inputs, parameters, outputs, in the order of
the KernelSignature) and the sizes and scalars in a `KernelTiling` struct that EvoKernel
defines. EvoKernel writes the host side: the source is built with CANN's `ascendc_library`
CMake function, whose generated `aclrtlaunch_kernel(blockDim, stream, args...)` launches
`kernel<<<blockDim, nullptr, stream>>>`; the trusted wrapper below calls it through ctypes
on the device's current stream.

Nothing here imports torch_npu, and torch only inside make_ascend_module: the tests use
this module on machines without an NPU.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any

from npu_pool.backends.base import KernelBuildError

if TYPE_CHECKING:
    import torch

    from npu_pool.tasks.signature import KernelArg, KernelSignature

SYSTEM_WORKSPACE_BYTES = 16 * 2**20  # scratch global memory for Ascend C library calls (SetSysWorkspace)
KERNEL_PRELUDE = """#include "kernel_operator.h"

{tiling}

// Copies the tiling struct from global memory into a local variable, one 32-bit word at a time.
template <typename T>
__aicore__ inline void CopyTiling(T* local, GM_ADDR tiling)
{{
    auto words = reinterpret_cast<__gm__ uint32_t*>(tiling);
    auto out = reinterpret_cast<uint32_t*>(local);
    for (uint32_t i = 0; i < sizeof(T) / sizeof(uint32_t); ++i) {{
        out[i] = words[i];
    }}
}}
"""
CMAKE_TEMPLATE = """cmake_minimum_required(VERSION 3.16)
project(evokernel_ascendc)
set(SOC_VERSION "{soc}" CACHE STRING "system on chip type")
set(ASCEND_CANN_PACKAGE_PATH "{cann}" CACHE PATH "CANN installation")
set(RUN_MODE "npu" CACHE STRING "run mode")
set(CMAKE_BUILD_TYPE "Release" CACHE STRING "" FORCE)
if(EXISTS ${{ASCEND_CANN_PACKAGE_PATH}}/compiler/tikcpp/ascendc_kernel_cmake)
    set(ASCENDC_CMAKE_DIR ${{ASCEND_CANN_PACKAGE_PATH}}/compiler/tikcpp/ascendc_kernel_cmake)
elseif(EXISTS ${{ASCEND_CANN_PACKAGE_PATH}}/tools/tikcpp/ascendc_kernel_cmake)
    set(ASCENDC_CMAKE_DIR ${{ASCEND_CANN_PACKAGE_PATH}}/tools/tikcpp/ascendc_kernel_cmake)
else()
    message(FATAL_ERROR "ascendc_kernel_cmake not found under ${{ASCEND_CANN_PACKAGE_PATH}}")
endif()
include(${{ASCENDC_CMAKE_DIR}}/ascendc.cmake)
ascendc_library(evokernel_kernel SHARED kernel.cpp)
"""


# --- the CANN build ---------------------------------------------------------------------


def cann_version(home: Path) -> str:
    for name in ("version.cfg", "version.info"):
        for path in (home / name, home / "compiler" / name, home / "runtime" / name):
            if path.is_file():
                return path.read_text()[:500]
    return str(home)


def build_ascendc_library(source: str, signature: KernelSignature, soc: str, home: Path, work_dir: Path,
                          cache_dir: Path) -> Path:
    """Build `source` with CANN's ascendc_library for `soc`; the cached .so holding aclrtlaunch_<function>."""
    full = kernel_translation_unit(source, signature)
    cmake = CMAKE_TEMPLATE.format(soc=soc, cann=home)
    key = hashlib.sha256("\0".join([full, cmake, cann_version(home)]).encode()).hexdigest()[:24]
    artifact = cache_dir / f"kernel-{key}.so"
    if artifact.exists():
        return artifact
    build = work_dir / "ascendc"
    build.mkdir(parents=True, exist_ok=True)
    (build / "kernel.cpp").write_text(full)
    (build / "CMakeLists.txt").write_text(cmake)
    log = []
    for command in (["cmake", "-S", str(build), "-B", str(build / "out")],
                    ["cmake", "--build", str(build / "out"), "-j", str(os.cpu_count() or 4)]):
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=900, cwd=build)
        except subprocess.TimeoutExpired as exc:
            raise KernelBuildError("the Ascend C build timed out after 900 s", "\n".join(log)) from exc
        log.append(done.stdout + done.stderr)
        if done.returncode != 0:
            raise KernelBuildError(f"{' '.join(command[:2])} exited with {done.returncode}", "\n".join(log))
    built = sorted((build / "out").rglob("libevokernel_kernel.so"))
    if not built:
        raise KernelBuildError("the Ascend C build produced no libevokernel_kernel.so", "\n".join(log))
    cache_dir.mkdir(parents=True, exist_ok=True)
    tmp = cache_dir / f".kernel-{key}-{os.getpid()}.so"
    shutil.copyfile(built[0], tmp)
    os.replace(tmp, artifact)
    return artifact


# --- the kernel-source format ------------------------------------------------------------


def tiling_fields(signature: KernelSignature) -> list[tuple[KernelArg, str]]:
    """(argument, C type) of each KernelTiling field: int64 sizes and scalars first, then
    floats, so the struct has no interior padding and ctypes lays it out like the compiler."""
    ints = [(a, "int64_t") for a in signature.args if a.role in ("scalar", "size") and a.ctype == "int64_t"]
    floats = [(a, "float") for a in signature.args if a.role == "scalar" and a.ctype != "int64_t"]
    return ints + floats


def render_tiling_struct(signature: KernelSignature) -> str:
    lines = ["struct KernelTiling {"]
    fields = [(f"{ctype} {arg.name};", arg.doc) for arg, ctype in tiling_fields(signature)]
    fields.append(("uint32_t block_dim;", "number of blocks launched (GetBlockNum())"))
    width = max(len(decl) for decl, _ in fields) + 2
    lines += [f"    {decl:<{width}}// {doc}" for decl, doc in fields]
    lines.append("};")
    return "\n".join(lines)


def render_ascendc_signature(signature: KernelSignature) -> str:
    tensors = [a for a in signature.args if a.is_tensor]
    lines = [
        "// Ascend C kernel (kernel_operator.h, KernelTiling, CopyTiling provided), run on block_dim blocks:",
        "// split by GetBlockIdx()/GetBlockNum(). Tensors: contiguous, row-major, global memory; outputs start",
        "// as NaN: write every element. Sizes and scalars: `KernelTiling t; CopyTiling(&t, tiling);`",
        render_tiling_struct(signature),
        f'extern "C" __global__ __aicore__ void {signature.function}(',
    ]
    entries = [(f"GM_ADDR {a.name},", f"{a.doc}") for a in tensors]
    entries.append(("GM_ADDR workspace,", f"{SYSTEM_WORKSPACE_BYTES >> 20} MiB scratch (SetSysWorkspace(workspace) before Matmul)"))
    # The definition to fill, `)` on the last parameter's line: shown as a declaration, with `);`
    # on a line of its own, a small model kept the commented lines and put `{` where `);` was,
    # dropping the `)` (bench/entry_probe.py: 6 of 9 replies held a kernel then, 9 of 9 in this
    # form; docs/accelerator_backends.md).
    entries.append(("GM_ADDR tiling)", "KernelTiling in global memory"))
    width = max(len(decl) for decl, _ in entries) + 2
    lines += [f"    {decl:<{width}}// {doc}" for decl, doc in entries]
    lines += ["{", "    // the kernel's body", "}"]
    return "\n".join(lines)


def kernel_translation_unit(source: str, signature: KernelSignature) -> str:
    """What is compiled: the prelude with the tiling struct, then the LLM's kernel."""
    return KERNEL_PRELUDE.format(tiling=render_tiling_struct(signature)) + '\n#line 1 "kernel.cpp"\n' + source


def tiling_type(signature: KernelSignature) -> type[ctypes.Structure]:
    ctypes_of = {"int64_t": ctypes.c_int64, "float": ctypes.c_float}
    fields = [(arg.name, ctypes_of[ctype]) for arg, ctype in tiling_fields(signature)]
    return type("KernelTiling", (ctypes.Structure,), {"_fields_": [*fields, ("block_dim", ctypes.c_uint32)]})


def load_launcher(artifact: Path, signature: KernelSignature) -> Any:
    """`aclrtlaunch_<function>(blockDim, stream, GM_ADDR..., workspace, tiling)` from the library."""
    lib = ctypes.CDLL(str(artifact))
    fn = getattr(lib, f"aclrtlaunch_{signature.function}")
    tensors = sum(1 for a in signature.args if a.is_tensor)
    fn.restype = ctypes.c_uint32
    fn.argtypes = [ctypes.c_uint32, ctypes.c_void_p] + [ctypes.c_void_p] * (tensors + 2)
    fn._evokernel_lib = lib  # keep the library loaded as long as the function lives
    return fn


def make_ascend_module(launch: Any, signature: KernelSignature, reference: torch.nn.Module, device: str,
                       block_dim: int, stream_of: Any, flush_queue: bool, register: Any = None,
                       explain: Any = None, host_tiling: Any = None, guard_inputs: bool = False) -> torch.nn.Module:
    """The trusted ModelNew of the Ascend kernel format (built lazily: torch is imported here).

    `stream_of(device)` gives the stream to launch on (None: no stream, the CPU twin).
    `register(name, tensor, access, guard)`, when given, is told every global-memory region of a
    launch before it starts (access 0 read-only, 1 an output, 2 the shared workspace; guard: the
    bytes of its guard bands before and after it); `explain(status)` words a nonzero launch
    status. `host_tiling(KernelTiling bytes)`, the candidate's host half when it has one, gives
    (the kernel's tiling bytes, the block count, user workspace bytes) before each launch, as
    CANN's host tiling runs before a launch.

    Guard bands, while outputs are poisoned (correctness, not profiling): as the cpu backend's
    wrapper does, every output is followed in its buffer by GUARD_ELEMENTS poisoned elements,
    checked after the launch, so a kernel writing past its output's end is told so; with
    `guard_inputs` (the twin, which also tells its runtime about them) every tensor lies between
    two such bands, inputs in a copy."""
    import torch

    from npu_pool.backends.kernel_wrapper import GUARD_ELEMENTS, poisoned, still_poisoned

    def banded(shape: Any, dtype: torch.dtype, leading: bool, fill: bool = True) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """A tensor of `shape` (poisoned, unless not `fill`: the caller fills it) in one buffer with
        poisoned guard bands after it (and before it when leading): (the tensor, {"before": band,
        "after": band})."""
        numel = int(torch.Size(shape).numel())
        lead = GUARD_ELEMENTS if leading else 0
        if fill:
            buffer = poisoned([lead + numel + GUARD_ELEMENTS], dtype, device)
        else:
            buffer = torch.empty([lead + numel + GUARD_ELEMENTS], dtype=dtype, device=device)
        guards = {"before": buffer[:lead], "after": buffer[lead + numel:]}
        guards = {side: band for side, band in guards.items() if band.numel()}
        if not fill:
            for band in guards.values():
                band.copy_(poisoned([band.numel()], dtype, device))
        return buffer[lead:lead + numel].view(shape), guards

    tiling_class = tiling_type(signature)
    fields = tiling_fields(signature)

    class AscendKernelModule(torch.nn.Module):
        """Reference's forward signature; packs tensors, tiling and workspace and launches."""

        def __init__(self) -> None:
            super().__init__()
            self.poison_outputs = True  # the profiler turns this off, as for the CPU wrapper
            self.__dict__["_reference"] = reference
            self._workspace: torch.Tensor | None = None
            self._in_flight: list[torch.Tensor] = []

        def forward(self, *args: Any) -> Any:
            call = dict(zip(signature.forward_args, args, strict=False))
            named = dict(reference.named_parameters())
            named.update(dict(reference.named_buffers()))
            pointers: list[int] = []
            keep: list[torch.Tensor] = []
            outputs: list[torch.Tensor] = []
            shapes: dict[str, tuple[int, ...]] = {}
            bands: dict[str, dict[str, torch.Tensor]] = {}  # a guarded tensor's name -> its guard bands
            for arg in signature.args:
                if arg.role in ("input", "parameter"):
                    t = (call[arg.source] if arg.role == "input" else named[arg.source]).detach().contiguous()
                    if guard_inputs and self.poison_outputs:
                        copy, bands[arg.name] = banded(t.shape, t.dtype, leading=True, fill=False)
                        t = copy.copy_(t)
                elif arg.role == "output":
                    dtype = getattr(torch, arg.dtype or "float32")
                    shape = arg.shape or []
                    if self.poison_outputs:
                        t, bands[arg.name] = banded(shape, dtype, leading=guard_inputs)
                    else:
                        t = torch.empty(shape, dtype=dtype, device=device)
                    outputs.append(t)
                else:
                    continue
                keep.append(t)
                shapes[arg.name] = tuple(t.shape)
                pointers.append(t.data_ptr())
            tiling = tiling_class()
            for arg, ctype in fields:
                if arg.role == "size":
                    value: Any = shapes[arg.source][arg.index]
                else:
                    value = call[arg.source] if arg.source in call else signature.init_args[arg.source]
                    if arg.index is not None:
                        value = value[arg.index]
                setattr(tiling, arg.name, int(value) if ctype == "int64_t" else float(value))
            tiling.block_dim = block_dim
            tiling_bytes, blocks, user_workspace = bytes(tiling), block_dim, 0
            if host_tiling is not None:
                tiling_bytes, blocks, user_workspace = host_tiling(tiling_bytes)
            tiling_device = torch.frombuffer(bytearray(tiling_bytes or b"\0"), dtype=torch.uint8).to(device)
            workspace_bytes = SYSTEM_WORKSPACE_BYTES + user_workspace  # the system workspace first, as CANN lays it out
            if self._workspace is None or self._workspace.numel() < workspace_bytes:
                self._workspace = torch.empty(workspace_bytes, dtype=torch.uint8, device=device)
            stream = stream_of(device) if stream_of is not None else None
            if flush_queue and stream is not None:
                # torch_npu queues its own operators on a worker thread; wait until the copies
                # and fills above reached the stream before launching behind torch's back.
                stream.synchronize()
            if register is not None:
                tensor_args = [a for a in signature.args if a.is_tensor]
                for arg, t in zip(tensor_args, keep, strict=True):
                    guard = [g.numel() * g.element_size() if g is not None else 0
                             for g in (bands.get(arg.name, {}).get(side) for side in ("before", "after"))]
                    register(arg.name, t, 1 if arg.role == "output" else 0, tuple(guard))
                register("workspace", self._workspace, 2, (0, 0))
                register("tiling", tiling_device, 0, (0, 0))
            status = launch(blocks, stream.npu_stream if stream is not None else None, *pointers,
                            self._workspace.data_ptr(), tiling_device.data_ptr())
            if status:
                raise RuntimeError(explain(status) if explain is not None
                                   else f"aclrtlaunch_{signature.function} returned error {status}")
            for name, guards in bands.items():
                for side, band in guards.items():
                    if not still_poisoned(band):
                        where = "past the end of" if side == "after" else "before the start of"
                        raise RuntimeError(f"the kernel wrote {where} its tensor {name} ({list(shapes[name])}), into "
                                           "the guard band there: take every size from the arguments, not from the "
                                           "sizes shown")
            self._in_flight = [*keep, tiling_device]  # alive until the next call
            return outputs[0] if len(outputs) == 1 else tuple(outputs)

    return AscendKernelModule()
