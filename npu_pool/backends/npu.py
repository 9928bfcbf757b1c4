"""The Ascend NPU backend, through torch_npu and Huawei's CANN toolkit.

torch_npu is imported lazily, never when this module is imported: this module must load
(and say clearly what is missing) on machines without CANN. ModelNew candidates run as
they are (Triton-Ascend kernels, torch_npu custom ops). The kernel-source format, an Ascend
C kernel entry built with CANN's `ascendc_library`, lives in npu_pool.backends.ascendc; its
names are re-exported here. The trusted wrapper calls the built kernel through ctypes on
torch_npu's current stream.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from npu_pool.backends.ascendc import (
    CMAKE_TEMPLATE,
    KERNEL_PRELUDE,
    SYSTEM_WORKSPACE_BYTES,
    build_ascendc_library,
    cann_version,
    kernel_translation_unit,
    load_launcher,
    make_ascend_module,
    render_ascendc_signature,
    render_tiling_struct,
    tiling_fields,
    tiling_type,
)
from npu_pool.backends.base import DevicePeaks, KernelBuildError, ToolchainMissing
from npu_pool.backends.events import EventApi, EventBackend, measure_peaks, visible_device_problem

if TYPE_CHECKING:
    import torch

    from npu_pool.tasks.signature import KernelSignature

__all__ = [
    "CMAKE_TEMPLATE", "DEFAULT_CANN_HOMES", "KERNEL_PRELUDE", "SYSTEM_WORKSPACE_BYTES", "NpuBackend",
    "build_ascendc_library", "cann_home", "cann_version", "explain_torch_import_failure",
    "kernel_translation_unit", "load_launcher", "make_ascend_module", "render_ascendc_signature",
    "render_tiling_struct", "tiling_fields", "tiling_type", "torch_npu_installed",
]

DEFAULT_CANN_HOMES = ("/usr/local/Ascend/ascend-toolkit/latest", "/usr/local/Ascend/cann", "/usr/local/Ascend/latest")


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


class NpuBackend(EventBackend):
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
        problem = visible_device_problem(torch.npu, self.index, "no Ascend NPU visible", "ASCEND_RT_VISIBLE_DEVICES", "NPU")
        return (False, problem) if problem else (True, "")

    def toolchain_problem(self, candidate_format: str | None) -> str | None:
        if candidate_format == "kernel" and shutil.which("cmake") is None:
            return "cmake not found on PATH: CANN's ascendc_library needs it"
        return None

    def toolchain_identity(self) -> dict[str, str]:
        home = cann_home()
        return {"soc": self.soc_version(), "cann": cann_version(home) if home else "none"}

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
            raise ToolchainMissing("CANN toolkit not found (set ASCEND_HOME_PATH): cannot build Ascend C kernels")
        if shutil.which("cmake") is None:
            raise ToolchainMissing("cmake not found on PATH: CANN's ascendc_library needs it")
        from npu_pool.backends.ascendc_twin.build import has_host_half

        if has_host_half(source):
            # the host half is run by the npu-twin launcher; CANN's build of it is not written yet
            raise KernelBuildError("a host tiling half (TilingFunc) runs on the npu-twin backend only; for the npu "
                                   "backend compute the tiling inside the kernel from KernelTiling")
        return build_ascendc_library(source, signature, self.soc_version(), home, work_dir, cache_dir)

    def wrap_kernel(self, artifact: Path, signature: KernelSignature, reference: torch.nn.Module) -> torch.nn.Module:
        torch = self.select()
        try:
            launch = load_launcher(artifact, signature)
        except (OSError, AttributeError) as exc:
            raise KernelBuildError(f"cannot load aclrtlaunch_{signature.function} from the built library: {exc}") from exc
        stream_of = torch.npu.current_stream
        return make_ascend_module(launch, signature, reference, self.device, self.block_dim(), stream_of,
                                  flush_queue=os.environ.get("TASK_QUEUE_ENABLE", "1") != "0")

