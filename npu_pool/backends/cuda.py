"""The CUDA backend: load_inline CUDA C++ and Triton for ModelNew candidates, nvcc for the
kernel format (a host entry point, called through ctypes, that launches the LLM's
`__global__` kernels on device pointers and the stream it is given: backends/cuda_kernel.py).
The kernel format is a compile route only where nvcc is found.

Timing uses device events (npu_pool.backends.events) with the event methods taken from
torch's C base class, which Python code cannot patch.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from npu_pool.backends import cuda_kernel
from npu_pool.backends.base import DevicePeaks, KernelBuildError, ToolchainMissing
from npu_pool.backends.cuda_kernel import nvcc_version
from npu_pool.backends.events import EventApi, EventBackend, measure_peaks, visible_device_problem

if TYPE_CHECKING:
    import torch

    from npu_pool.tasks.signature import KernelSignature


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


def torch_cuda_home() -> str | None:
    """The CUDA toolkit torch's extension builder (load_inline) uses, or None."""
    try:
        from torch.utils.cpp_extension import CUDA_HOME
    except ImportError:
        return None
    return CUDA_HOME if CUDA_HOME and Path(CUDA_HOME, "bin", "nvcc").is_file() else None


NVCC_MISSING = "nvcc not found: install the CUDA toolkit or set CUDA_HOME"


class CudaBackend(EventBackend):
    name = "cuda"
    kernel_language = "cuda"
    sandbox_env_allow = ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "CUDA_HOME", "CUDA_PATH",
                         "TORCH_CUDA_ARCH_LIST", "TRITON_CACHE_DIR", "NVIDIA_VISIBLE_DEVICES")
    # cuInit returns 304 (CUDA_ERROR_OPERATING_SYSTEM) in a new PID namespace that still sees
    # the host's /proc, with or without Landlock (H100, driver 580.159, 2026-11-25): the
    # runner's processes are swept by a subreaper instead.
    pid_namespace = False

    def __init__(self, index: int = 0) -> None:
        # Ray's GPU resource narrows CUDA_VISIBLE_DEVICES to the actor's GPU: index 0 is it.
        self.index = index
        self._api: EventApi | None = None
        self._flush_buffer: torch.Tensor | None = None
        self._selected = False
        if self.is_available()[0]:
            self._api = _capture_events()

    @property
    def compile_routes(self) -> tuple[str, ...]:  # type: ignore[override]
        """ModelNew always (its own check names a missing toolkit); the kernel format only
        where nvcc is found, so a model is never asked for a format that cannot build here."""
        return ("modelnew", "kernel") if find_nvcc() is not None else ("modelnew",)

    def is_available(self) -> tuple[bool, str]:
        import torch

        if torch.version.cuda is None:
            return False, f"this torch build ({torch.__version__}) has no CUDA support; install a CUDA build of torch"
        problem = visible_device_problem(torch.cuda, self.index, "no CUDA device visible", "CUDA_VISIBLE_DEVICES", "CUDA device")
        return (False, problem) if problem else (True, "")

    def toolchain_problem(self, candidate_format: str | None) -> str | None:
        if candidate_format == "kernel" and find_nvcc() is None:
            return NVCC_MISSING
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
            # Full float32 for the reference, the eager baseline and the candidate alike: cuDNN
            # convolutions default to TF32 on Ampere and later (about 1e-3 relative error), which
            # fails an exact float32 kernel against the 1e-4 tolerance (34_Conv1d's template did).
            torch.backends.cudnn.allow_tf32 = False
            torch.backends.cuda.matmul.allow_tf32 = False
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
        return cuda_kernel.render_cuda_signature(signature)

    def capability(self) -> tuple[int, int]:
        import torch

        major, minor = torch.cuda.get_device_capability(self.index)
        return major, minor

    def arch_flags(self) -> list[str]:
        return cuda_kernel.arch_flags(self.capability())

    def compile_kernel(self, source: str, signature: KernelSignature, work_dir: Path, cache_dir: Path) -> Path:
        nvcc = find_nvcc()
        if nvcc is None:
            raise ToolchainMissing(NVCC_MISSING)
        return cuda_kernel.build_kernel(source, signature, nvcc, self.capability(), work_dir, cache_dir)

    def wrap_kernel(self, artifact: Path, signature: KernelSignature, reference: torch.nn.Module) -> torch.nn.Module:
        self.select()
        try:
            entry, check = cuda_kernel.load_cuda_entry(artifact, signature)
        except (OSError, AttributeError) as exc:
            raise KernelBuildError(f"cannot load {signature.function} from the compiled library: {exc}") from exc
        return cuda_kernel.make_cuda_kernel_module(entry, check, signature, reference, self.device,
                                                   self._api.current_stream)
