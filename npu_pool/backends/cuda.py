"""The CUDA backend: load_inline CUDA C++ and Triton for ModelNew candidates, nvcc for the
kernel format (a host entry point, called through ctypes, that launches the LLM's
`__global__` kernels on device pointers).

Timing uses device events (npu_pool.backends.events) with the event methods taken from
torch's C base class, which Python code cannot patch.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

from npu_pool.backends.base import DevicePeaks, KernelBuildError, ToolchainMissing
from npu_pool.backends.events import EventApi, EventBackend, measure_peaks, visible_device_problem

if TYPE_CHECKING:
    import torch

    from npu_pool.signature import KernelSignature

NVCC_FLAGS = ("-O3", "-std=c++17", "-shared", "-Xcompiler", "-fPIC", "-lineinfo")
KERNEL_PRELUDE = """#include <cstdint>
#include <cstddef>
#include <cmath>
#include <cfloat>
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
"""


def _capture_events() -> EventApi:
    import torch

    return EventApi.capture(torch.cuda, torch._C._CudaEventBase)


def find_nvcc() -> str | None:
    """nvcc from CUDA_HOME (as torch's extension builder finds it) or PATH."""
    try:
        from torch.utils.cpp_extension import CUDA_HOME
    except ImportError:
        CUDA_HOME = None  # noqa: N806 - torch's name
    for home in (CUDA_HOME, os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH")):
        if home and Path(home, "bin", "nvcc").is_file():
            return str(Path(home, "bin", "nvcc"))
    return shutil.which("nvcc")


@functools.cache
def nvcc_version(nvcc: str) -> str:
    """The last line of `nvcc --version` (e.g. `Build cuda_13.0.r13.0/compiler.36424714_0`)."""
    try:
        lines = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=60).stdout.strip().splitlines()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return lines[-1] if lines else "unknown"


def torch_cuda_home() -> str | None:
    """The CUDA toolkit torch's extension builder (load_inline) uses, or None."""
    try:
        from torch.utils.cpp_extension import CUDA_HOME
    except ImportError:
        return None
    return CUDA_HOME if CUDA_HOME and Path(CUDA_HOME, "bin", "nvcc").is_file() else None


class CudaBackend(EventBackend):
    name = "cuda"
    compile_routes = ("modelnew", "kernel")
    kernel_language = "cuda"
    sandbox_env_allow = ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "CUDA_HOME", "CUDA_PATH",
                         "TORCH_CUDA_ARCH_LIST", "TRITON_CACHE_DIR", "NVIDIA_VISIBLE_DEVICES")

    def __init__(self, index: int = 0) -> None:
        # Ray's GPU resource narrows CUDA_VISIBLE_DEVICES to the actor's GPU: index 0 is it.
        self.index = index
        self._api: EventApi | None = None
        self._flush_buffer: torch.Tensor | None = None
        self._selected = False
        if self.is_available()[0]:
            self._api = _capture_events()

    def is_available(self) -> tuple[bool, str]:
        import torch

        if torch.version.cuda is None:
            return False, f"this torch build ({torch.__version__}) has no CUDA support; install a CUDA build of torch"
        problem = visible_device_problem(torch.cuda, self.index, "no CUDA device visible", "CUDA_VISIBLE_DEVICES", "CUDA device")
        return (False, problem) if problem else (True, "")

    def toolchain_problem(self, candidate_format: str | None) -> str | None:
        if candidate_format == "kernel" and find_nvcc() is None:
            return "nvcc not found: install the CUDA toolkit or set CUDA_HOME"
        if candidate_format == "modelnew" and torch_cuda_home() is None:
            return ("the CUDA toolkit is not found (CUDA_HOME is not set and no nvcc under it): load_inline "
                    "cannot build CUDA sources; install the CUDA toolkit or set CUDA_HOME")
        return None

    def toolchain_identity(self) -> dict[str, str]:
        import torch
        from torch.utils.cpp_extension import get_cxx_compiler

        from npu_pool.backends.cpu import compiler_identity

        major, minor = torch.cuda.get_device_capability(self.index)
        nvcc = find_nvcc()
        return {"capability": f"sm_{major}{minor}", "nvcc": nvcc_version(nvcc) if nvcc else "none",
                "torch_cuda": str(torch.version.cuda), "arch_list": os.environ.get("TORCH_CUDA_ARCH_LIST", ""),
                "cxx": compiler_identity(get_cxx_compiler())}

    @property
    def device(self) -> str:
        return f"cuda:{self.index}"

    def select(self) -> None:
        """Make this backend's GPU the current device of the process (once)."""
        if not self._selected:
            import torch

            available, why = self.is_available()
            if not available:
                raise RuntimeError(f"the cuda backend cannot run here: {why}")
            torch.cuda.set_device(self.index)
            self._api = self._api or _capture_events()
            self._selected = True

    def flush_cache(self) -> None:
        """Overwrite a buffer several times the L2 size, so no trial starts on warm data."""
        import torch

        self.select()
        if self._flush_buffer is None:
            l2 = getattr(torch.cuda.get_device_properties(self.index), "L2_cache_size", 0) or 64 * 2**20
            self._flush_buffer = torch.empty(max(4 * l2, 256 * 2**20), dtype=torch.uint8, device=self.device)
        self._flush_buffer.fill_(1)

    def memory_stats(self) -> dict[str, int]:
        """Bytes allocated now, at peak and reserved by torch, and free/total on the device."""
        import torch

        self.select()
        free, total = torch.cuda.mem_get_info(self.index)
        return {"allocated": torch.cuda.memory_allocated(self.index), "peak": torch.cuda.max_memory_allocated(self.index),
                "reserved": torch.cuda.memory_reserved(self.index), "free": free, "total": total}

    def measure_peaks(self) -> DevicePeaks:
        import torch

        self.select()
        tf32 = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = False  # a float32 peak, not TF32
        try:
            return measure_peaks(torch, self.device, self.timer, 8192, "cuda (no TF32)")
        finally:
            torch.backends.cuda.matmul.allow_tf32 = tf32

    # --- the kernel-source format --------------------------------------------------------

    def render_kernel_signature(self, signature: KernelSignature) -> str:
        # the argument list is the CPU format's; only the guidance above it differs
        arguments = [line for line in signature.render_c().splitlines() if not line.startswith("//")]
        return "\n".join([
            "// Write this host function (CUDA C++17) and the __global__ kernels it launches.",
            "// Pointers are device pointers; all tensors are contiguous, row-major.",
            "// Launch with <<<grid, block>>> on the default stream; do not synchronise or allocate.",
            "// Outputs are pre-allocated and filled with NaN: write every element.",
            *arguments,
        ])

    def arch_flags(self) -> list[str]:
        import torch

        major, minor = torch.cuda.get_device_capability(self.index)
        return ["-gencode", f"arch=compute_{major}{minor},code=sm_{major}{minor}"]

    def compile_kernel(self, source: str, signature: KernelSignature, work_dir: Path, cache_dir: Path) -> Path:
        nvcc = find_nvcc()
        if nvcc is None:
            raise ToolchainMissing("nvcc not found: install the CUDA toolkit or set CUDA_HOME")
        full = KERNEL_PRELUDE + signature.declaration() + '\n#line 1 "kernel.cu"\n' + source
        flags = [*NVCC_FLAGS, *self.arch_flags()]  # the device's compute capability
        key = hashlib.sha256("\0".join([full, *flags, nvcc_version(nvcc)]).encode()).hexdigest()[:24]
        artifact = cache_dir / f"kernel-{key}.so"
        if artifact.exists():
            return artifact
        src = work_dir / "kernel_full.cu"
        src.write_text(full)
        cache_dir.mkdir(parents=True, exist_ok=True)
        tmp = cache_dir / f".kernel-{key}-{os.getpid()}.so"
        try:
            done = subprocess.run([nvcc, *flags, "-o", str(tmp), str(src)], capture_output=True, text=True,
                                  timeout=600, cwd=work_dir)
        except subprocess.TimeoutExpired as exc:
            raise KernelBuildError("nvcc timed out after 600 s") from exc
        if done.returncode != 0:
            raise KernelBuildError(f"nvcc exited with {done.returncode}", done.stderr + done.stdout)
        os.replace(tmp, artifact)
        return artifact

    def wrap_kernel(self, artifact: Path, signature: KernelSignature, reference: torch.nn.Module) -> torch.nn.Module:
        from npu_pool.kernel_wrapper import KernelModule, load_entry

        self.select()
        try:
            entry = load_entry(artifact, signature)
        except (OSError, AttributeError) as exc:
            raise KernelBuildError(f"cannot load {signature.function} from the compiled library: {exc}") from exc
        return KernelModule(entry, signature, reference, self.device)
