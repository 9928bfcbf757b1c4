"""The Ascend NPU backend, through torch_npu and Huawei's CANN toolkit.

torch_npu is imported lazily, never when this module is imported: this module must load
(and say clearly what is missing) on machines without CANN. ModelNew candidates run as
they are (Triton-Ascend kernels, torch_npu custom ops). The kernel-source format is an
Ascend C kernel entry

    extern "C" __global__ __aicore__ void kernel(GM_ADDR <tensor>..., GM_ADDR workspace, GM_ADDR tiling);

with one global-memory address per tensor (inputs, parameters, outputs, in the order of
the KernelSignature) and the sizes and scalars in a `KernelTiling` struct that EvoKernel
defines. EvoKernel writes the host side: the source is built with CANN's `ascendc_library`
CMake function, whose generated `aclrtlaunch_kernel(blockDim, stream, args...)` launches
`kernel<<<blockDim, nullptr, stream>>>`; the trusted wrapper below calls it through ctypes
on torch_npu's current stream.
"""

from __future__ import annotations

import ctypes
import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from npu_pool.backends.base import Backend, DevicePeaks, KernelBuildError, Timer
from npu_pool.backends.events import EventApi, EventTimer, measure_peaks

if TYPE_CHECKING:
    import torch

    from npu_pool.signature import KernelArg, KernelSignature

DEFAULT_CANN_HOMES = ("/usr/local/Ascend/ascend-toolkit/latest", "/usr/local/Ascend/cann", "/usr/local/Ascend/latest")
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


# --- what is installed ------------------------------------------------------------------


def torch_npu_installed() -> bool:
    if "torch_npu" in sys.modules:
        return True
    try:
        return importlib.util.find_spec("torch_npu") is not None
    except (ImportError, ValueError):
        return False


def cann_home() -> Path | None:
    """The CANN toolkit holding libascendcl.so: $ASCEND_HOME_PATH, $ASCEND_TOOLKIT_HOME or a default."""
    candidates = [os.environ.get("ASCEND_HOME_PATH"), os.environ.get("ASCEND_TOOLKIT_HOME"), *DEFAULT_CANN_HOMES]
    for home in candidates:
        if home and any((Path(home) / sub / "libascendcl.so").is_file() for sub in ("lib64", "runtime/lib64")):
            return Path(home)
    return None


_CANN_LIBRARY_HINTS = ("libascend", "libhccl", "libacl", "libge_runner", "libgraph", "libc_sec", "libmsprof",
                       "libruntime", "ASCEND_", "CANN")


def explain_torch_import_failure(exc: BaseException) -> str | None:
    """A clear message when torch_npu (and with torch >= 2.5, which autoloads installed device
    backends, `import torch` itself) failed because CANN's libraries are missing; else None."""
    text = f"{type(exc).__name__}: {exc}"
    if not any(hint in text for hint in _CANN_LIBRARY_HINTS):
        return None
    return ("torch_npu is installed but cannot load CANN's libraries "
            f"({text.splitlines()[0][:200]}). Source CANN's set_env.sh (ASCEND_HOME_PATH), or set "
            "TORCH_DEVICE_BACKEND_AUTOLOAD=0 to use the cpu and cuda backends, or uninstall torch-npu.")


def _import_torch_npu() -> Any:
    import torch
    import torch_npu  # noqa: F401 - registers torch.npu

    return torch


# --- the backend -------------------------------------------------------------------------


class NpuBackend(Backend):
    name = "npu"
    compile_routes = ("modelnew", "kernel")
    kernel_language = "ascendc"
    sandbox_env_allow = (
        "ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME", "ASCEND_OPP_PATH", "ASCEND_AICPU_PATH",
        "ASCEND_CUSTOM_OPP_PATH", "ASCEND_RT_VISIBLE_DEVICES", "ASCEND_GLOBAL_LOG_LEVEL",
        "ASCEND_SLOG_PRINT_TO_STDOUT", "ASCEND_CACHE_PATH", "ASCEND_WORK_PATH", "TOOLCHAIN_HOME",
        "LD_LIBRARY_PATH", "TORCH_DEVICE_BACKEND_AUTOLOAD", "TASK_QUEUE_ENABLE", "TRITON_CACHE_DIR",
    )

    def __init__(self, index: int = 0) -> None:
        # Ray's NPU resource sets ASCEND_RT_VISIBLE_DEVICES to the actor's device: index 0 is it.
        self.index = index
        self._api: EventApi | None = None
        self._torch: Any = None
        self._flush_buffer: torch.Tensor | None = None

    def is_available(self) -> tuple[bool, str]:
        if not torch_npu_installed():
            return False, "torch_npu is not installed (pip install 'evokernel[npu]' on a machine with CANN)"
        home = cann_home()
        if home is None:
            return False, ("CANN toolkit not found: libascendcl.so is not under $ASCEND_HOME_PATH, "
                           f"$ASCEND_TOOLKIT_HOME or {', '.join(DEFAULT_CANN_HOMES)}; source CANN's set_env.sh")
        try:
            torch = _import_torch_npu()
        except Exception as exc:  # a broken install fails in many ways; report the first line
            first = str(exc).splitlines()[0][:200] if str(exc) else ""
            return False, explain_torch_import_failure(exc) or f"torch_npu is installed but does not import ({type(exc).__name__}: {first})"
        if not torch.npu.is_available() or torch.npu.device_count() == 0:
            visible = os.environ.get("ASCEND_RT_VISIBLE_DEVICES")
            return False, f"no Ascend NPU visible (ASCEND_RT_VISIBLE_DEVICES={visible if visible is not None else 'unset'})"
        if self.index >= torch.npu.device_count():
            return False, f"NPU {self.index} requested but only {torch.npu.device_count()} visible"
        return True, ""

    @property
    def device(self) -> str:
        return f"npu:{self.index}"

    def select(self) -> Any:
        """Import torch_npu, make this backend's NPU current (once) and return torch."""
        if self._torch is None:
            available, why = self.is_available()
            if not available:
                raise RuntimeError(f"the npu backend cannot run here: {why}")
            torch = _import_torch_npu()
            torch.npu.set_device(self.device)
            self._api = EventApi.capture(torch.npu)
            self._torch = torch
        return self._torch

    def synchronize(self) -> None:
        self.select()
        self._api.synchronize(self.device)

    def timer(self) -> Timer:
        self.select()
        return EventTimer(self._api, self.device)

    def flush_cache(self) -> None:
        """Overwrite 512 MiB (larger than any Ascend L2) so no trial starts on warm data."""
        torch = self.select()
        if self._flush_buffer is None:
            self._flush_buffer = torch.empty(512 * 2**20, dtype=torch.uint8, device=self.device)
        self._flush_buffer.fill_(1)

    def memory_stats(self) -> dict[str, int]:
        """Bytes allocated now, at peak and reserved by torch_npu, and free/total on the device."""
        torch = self.select()
        npu = torch.npu
        stats = {"allocated": npu.memory_allocated(self.device), "peak": npu.max_memory_allocated(self.device),
                 "reserved": npu.memory_reserved(self.device)}
        if hasattr(npu, "mem_get_info"):
            stats["free"], stats["total"] = npu.mem_get_info(self.device)
        return stats

    def measure_peaks(self) -> DevicePeaks:
        torch = self.select()
        hf32 = getattr(getattr(torch.npu, "matmul", None), "allow_hf32", None)
        if hf32 is not None:
            torch.npu.matmul.allow_hf32 = False  # a float32 peak, not HF32
        try:
            return measure_peaks(torch, self.device, self.timer, 4096, "npu")
        finally:
            if hf32 is not None:
                torch.npu.matmul.allow_hf32 = hf32

    def block_dim(self) -> int:
        """Blocks to launch: the device's vector cores (the AI cores on older chips), else 8."""
        torch = self.select()
        props = torch.npu.get_device_properties(self.index)
        for field in ("vector_core_num", "cube_core_num", "multi_processor_count"):
            value = getattr(props, field, 0)
            if isinstance(value, int) and value > 0:
                return value
        return 8

    def soc_version(self) -> str:
        """The SOC_VERSION CANN compiles for, e.g. Ascend910B3 (the device name without spaces)."""
        torch = self.select()
        return torch.npu.get_device_name(self.index).replace(" ", "")

    # --- the kernel-source format --------------------------------------------------------

    def render_kernel_signature(self, signature: KernelSignature) -> str:
        return render_ascendc_signature(signature)

    def compile_kernel(self, source: str, signature: KernelSignature, work_dir: Path, cache_dir: Path) -> Path:
        home = cann_home()
        if home is None:
            raise KernelBuildError("CANN toolkit not found (set ASCEND_HOME_PATH): cannot build Ascend C kernels")
        if shutil.which("cmake") is None:
            raise KernelBuildError("cmake not found on PATH: CANN's ascendc_library needs it")
        soc = self.soc_version()
        full = kernel_translation_unit(source, signature)
        cmake = CMAKE_TEMPLATE.format(soc=soc, cann=home)
        key = hashlib.sha256("\0".join([full, cmake, _cann_version(home)]).encode()).hexdigest()[:24]
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

    def wrap_kernel(self, artifact: Path, signature: KernelSignature, reference: torch.nn.Module) -> torch.nn.Module:
        torch = self.select()
        try:
            launch = load_launcher(artifact, signature)
        except (OSError, AttributeError) as exc:
            raise KernelBuildError(f"cannot load aclrtlaunch_{signature.function} from the built library: {exc}") from exc
        stream_of = torch.npu.current_stream
        return make_ascend_module(launch, signature, reference, self.device, self.block_dim(), stream_of,
                                  flush_queue=os.environ.get("TASK_QUEUE_ENABLE", "1") != "0")


def _cann_version(home: Path) -> str:
    for name in ("version.cfg", "version.info"):
        for path in (home / name, home / "compiler" / name, home / "runtime" / name):
            if path.is_file():
                return path.read_text()[:500]
    return str(home)


# --- the kernel-source format (shared with the tests, which have no NPU) -----------------


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
        "// Write this Ascend C kernel (C++17; kernel_operator.h, KernelTiling and CopyTiling are provided).",
        "// It is launched as kernel<<<block_dim, nullptr, stream>>>: split the work with GetBlockIdx() and",
        "// GetBlockNum(). Tensors are contiguous, row-major, in global memory; outputs are pre-filled with",
        "// NaN, so write every element. Read sizes and scalars with `KernelTiling t; CopyTiling(&t, tiling);`.",
        render_tiling_struct(signature),
        f'extern "C" __global__ __aicore__ void {signature.function}(',
    ]
    entries = [(f"GM_ADDR {a.name},", f"{a.doc}") for a in tensors]
    entries.append(("GM_ADDR workspace,", f"{SYSTEM_WORKSPACE_BYTES >> 20} MiB scratch (call SetSysWorkspace(workspace) first if you use Matmul)"))
    entries.append(("GM_ADDR tiling", "KernelTiling in global memory"))
    width = max(len(decl) for decl, _ in entries) + 2
    lines += [f"    {decl:<{width}}// {doc}" for decl, doc in entries]
    lines.append(");")
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
                       block_dim: int, stream_of: Any, flush_queue: bool) -> torch.nn.Module:
    """The trusted ModelNew of the Ascend kernel format (built lazily: torch is imported here)."""
    import torch

    from npu_pool.kernel_wrapper import poisoned

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
            for arg in signature.args:
                if arg.role in ("input", "parameter"):
                    t = (call[arg.source] if arg.role == "input" else named[arg.source]).detach().contiguous()
                elif arg.role == "output":
                    dtype = getattr(torch, arg.dtype or "float32")
                    shape = arg.shape or []
                    t = poisoned(shape, dtype, device) if self.poison_outputs else torch.empty(shape, dtype=dtype, device=device)
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
            tiling_device = torch.frombuffer(bytearray(bytes(tiling)), dtype=torch.uint8).to(device)
            if self._workspace is None:
                self._workspace = torch.empty(SYSTEM_WORKSPACE_BYTES, dtype=torch.uint8, device=device)
            stream = stream_of(device)
            if flush_queue:
                # torch_npu queues its own operators on a worker thread; wait until the copies
                # and fills above reached the stream before launching behind torch's back.
                stream.synchronize()
            status = launch(block_dim, stream.npu_stream, *pointers, self._workspace.data_ptr(), tiling_device.data_ptr())
            if status:
                raise RuntimeError(f"aclrtlaunch_{signature.function} returned error {status}")
            self._in_flight = [*keep, tiling_device]  # alive until the next call
            return outputs[0] if len(outputs) == 1 else tuple(outputs)

    return AscendKernelModule()
