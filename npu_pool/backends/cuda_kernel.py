"""The CUDA kernel-source format of the cuda backend: what the LLM writes, how nvcc builds it,
and how the trusted wrapper calls it.

The LLM writes its `__global__` kernels and one host launch function

    extern "C" void kernel(<device pointers>, <scalars>, <sizes>, cudaStream_t stream);

whose arguments are the task's derived KernelSignature (the CPU format's order and names,
with CUDA's names for half types) followed by the stream to launch on: the harness passes
torch's current stream of the device, the stream its timing events are recorded on. The
host function launches with `<<<grid, block, shared_bytes, stream>>>` and returns.

The harness compiles prelude + declaration + a launch-status function + the LLM's source
with `nvcc -shared -Xcompiler -fPIC` for the device's exact compute capability into a shared
object (content-addressed: source, nvcc command line, nvcc version, host compiler), loads it
with ctypes and calls it from `KernelModule` with `data_ptr()`s, then asks the library's own
CUDA runtime (nvcc links it statically) for the launch's error. nvcc rather than NVRTC: no
NVRTC binding (CuPy, cuda-python) is a dependency, and nvcc needs nothing beyond the CUDA
toolkit that load_inline already needs.

Nothing here imports torch at module level: the tests build commands, keys and sources on
machines without a GPU or nvcc. The GPU path was written from nvcc's and torch's documented
behaviour and has not yet run on a GPU (docs/accelerator_backends.md).
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import re
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any

from npu_pool.backends.base import KernelBuildError, ToolchainMissing
from npu_pool.build_cache import cached_library

if TYPE_CHECKING:
    import torch

    from npu_pool.tasks.signature import KernelSignature

# Element types as CUDA spells them (cuda_fp16.h, cuda_bf16.h); the others are the C ones.
CUDA_TYPES = {"_Float16": "__half", "__bf16": "__nv_bfloat16"}
# The parameter the harness appends to every signature.
STREAM_PARAM = ("cudaStream_t", "stream", "the stream to launch every kernel on (the harness times this stream)")
# Flags of every build; the architecture flags follow (arch_flags).
NVCC_FLAGS = ("-O3", "-std=c++17", "-shared", "-Xcompiler", "-fPIC", "-cudart=static", "-lineinfo")
NVCC_TIMEOUT_S = 600
KERNEL_PRELUDE = """#include <cstdint>
#include <cstddef>
#include <cmath>
#include <cfloat>
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
"""
# Compiled into every library, before the LLM's code: the launch status of this library's
# own CUDA runtime (statically linked, so torch's runtime never sees these launches' errors).
STATUS_FUNCTIONS = """extern "C" int evokernel_launch_status(void) { return (int)cudaGetLastError(); }
extern "C" const char* evokernel_error_string(int code) { return cudaGetErrorString((cudaError_t)code); }
"""
SOURCE_NAME = "kernel.cu"
# nvcc output that means the toolkit cannot build for this machine (not the candidate's fault).
_TOOLCHAIN_ERRORS = re.compile(r"Unsupported gpu architecture|is not defined for option 'gpu-name'"
                               r"|unsupported GNU version|unsupported clang version|cannot find -lcudart"
                               r"|No such file or directory[^\n]*(?:cuda_runtime|cuda_fp16|cuda_bf16)\.h")

HEADER = (
    "// Write this host function (CUDA C++17) and the __global__ kernels it launches; nvcc builds it for this GPU.",
    "// Pointers are device pointers; all tensors are contiguous, row-major.",
    "// Launch every kernel on `stream`: k<<<grid, block, shared_bytes, stream>>>(...). Return right after",
    "// launching: no synchronisation, no allocation, no other streams (the harness times `stream`).",
    "// Outputs are pre-allocated and filled with NaN: write every element.",
)


def cuda_signature(signature: KernelSignature) -> KernelSignature:
    """The task's signature with CUDA's element type names."""
    return signature.retyped(CUDA_TYPES)


def render_cuda_signature(signature: KernelSignature) -> str:
    """The host entry point the LLM must write, one comment per argument (for the prompt)."""
    return cuda_signature(signature).render_c(header=HEADER, extra=[STREAM_PARAM])


def kernel_translation_unit(source: str, signature: KernelSignature) -> str:
    """What nvcc compiles: prelude, the entry point's declaration (so a different signature is
    a compile error), the status functions, then the LLM's source (its own line numbers)."""
    declaration = cuda_signature(signature).declaration(extra=[STREAM_PARAM])
    return f'{KERNEL_PRELUDE}{declaration}\n{STATUS_FUNCTIONS}#line 1 "{SOURCE_NAME}"\n{source}'


def arch_flags(capability: tuple[int, int]) -> list[str]:
    """Machine code for exactly this compute capability (the cache key carries it)."""
    major, minor = capability
    return ["-gencode", f"arch=compute_{major}{minor},code=sm_{major}{minor}"]


def nvcc_flags(capability: tuple[int, int]) -> list[str]:
    return [*NVCC_FLAGS, *arch_flags(capability)]


def nvcc_command(nvcc: str, capability: tuple[int, int], source: Path, output: Path) -> list[str]:
    """The full nvcc command line of one build."""
    return [nvcc, *nvcc_flags(capability), "-o", str(output), str(source)]


@functools.cache
def nvcc_version(nvcc: str) -> str:
    """The last line of `nvcc --version` (e.g. `Build cuda_13.0.r13.0/compiler.36424714_0`)."""
    try:
        lines = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=60).stdout.strip().splitlines()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return lines[-1] if lines else "unknown"


def kernel_build_identity(nvcc: str, capability: tuple[int, int], host_compiler: str = "g++") -> dict[str, str]:
    """What besides the source determines the library: the flags (with the architecture), the
    nvcc release and the host compiler nvcc drives (g++ from PATH unless told otherwise)."""
    from npu_pool.backends.cpu import compiler_identity

    return {"capability": f"sm_{capability[0]}{capability[1]}", "flags": " ".join(nvcc_flags(capability)),
            "nvcc": nvcc_version(nvcc), "host_cxx": compiler_identity(host_compiler)}


def kernel_build_key(translation_unit: str, identity: dict[str, str]) -> str:
    """The content address of one build (24 hex digits)."""
    parts = [translation_unit, *(f"{k}={identity[k]}" for k in sorted(identity))]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:24]


def build_kernel(source: str, signature: KernelSignature, nvcc: str, capability: tuple[int, int],
                 work_dir: Path, cache_dir: Path) -> Path:
    """The shared object of `source` for this device, built by nvcc unless the cache has it.
    KernelBuildError with nvcc's output for the candidate's errors; ToolchainMissing when the
    toolkit cannot build for this device or host (an infrastructure failure)."""
    unit = kernel_translation_unit(source, signature)
    key = kernel_build_key(unit, kernel_build_identity(nvcc, capability))

    def build(src: Path, target: Path) -> None:
        try:
            done = subprocess.run(nvcc_command(nvcc, capability, src, target), capture_output=True, text=True,
                                  timeout=NVCC_TIMEOUT_S, cwd=work_dir)
        except subprocess.TimeoutExpired as exc:
            raise KernelBuildError(f"nvcc timed out after {NVCC_TIMEOUT_S} s") from exc
        except OSError as exc:
            raise ToolchainMissing(f"nvcc could not be started ({nvcc}): {exc}") from exc
        log = (done.stderr + done.stdout).strip()
        if done.returncode != 0:
            if _TOOLCHAIN_ERRORS.search(log):
                raise ToolchainMissing(f"nvcc ({nvcc_version(nvcc)}) cannot build for sm_{capability[0]}"
                                       f"{capability[1]} on this host: {log.splitlines()[0] if log else ''}"[:300], log)
            raise KernelBuildError(f"the kernel did not compile (nvcc exit {done.returncode})", log)

    return cached_library(cache_dir, key, work_dir, "kernel_full.cu", unit, build)


class LaunchCheck:
    """Reads the library's launch status after a call; raises the CUDA error it reports."""

    def __init__(self, lib: ctypes.CDLL, function: str):
        self._status = lib.evokernel_launch_status
        self._status.restype, self._status.argtypes = ctypes.c_int, []
        self._describe = lib.evokernel_error_string
        self._describe.restype, self._describe.argtypes = ctypes.c_char_p, [ctypes.c_int]
        self._function = function

    def clear(self) -> None:
        self._status()

    def __call__(self) -> None:
        code = self._status()
        if code:
            text = (self._describe(code) or b"").decode(errors="replace")
            raise RuntimeError(f"CUDA error {code} ({text}) from the launches in {self._function}")


def load_cuda_entry(artifact: Path, signature: KernelSignature) -> tuple[Any, LaunchCheck]:
    """The host entry point (its stream argument typed) and the library's launch check."""
    from npu_pool.backends.kernel_wrapper import load_entry

    entry = load_entry(artifact, cuda_signature(signature), extra_argtypes=[ctypes.c_void_p])
    return entry, LaunchCheck(entry._evokernel_lib, signature.function)


def make_cuda_kernel_module(entry: Any, check: LaunchCheck, signature: KernelSignature, reference: torch.nn.Module,
                            device: str, current_stream: Any) -> torch.nn.Module:
    """The trusted ModelNew: KernelModule with the current stream's handle appended to every
    call and the launch status checked after it (`current_stream(device)` as torch.cuda's,
    captured before any candidate code runs)."""
    from npu_pool.backends.kernel_wrapper import KernelModule

    def stream_handle() -> tuple[int]:
        check.clear()  # an earlier error of this library is not this call's
        return (current_stream(device).cuda_stream,)

    return KernelModule(entry, cuda_signature(signature), reference, device, extra_args=stream_handle, after_call=check)
