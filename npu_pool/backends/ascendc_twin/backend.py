"""The npu-twin backend: the npu backend's Ascend C kernel format, built with the system g++
against EvoKernel's CPU twin of the Ascend C programming model (include/ beside this module).

The kernel translation unit is exactly the npu backend's (ascendc.kernel_translation_unit:
the same entry, KernelTiling, CopyTiling and workspace), so a kernel that passes here builds
unchanged with CANN's ascendc_library; only the include path differs. A generated launcher
TU exports CANN's ABI, `aclrtlaunch_<function>(blockDim, stream, GM_ADDR..., workspace,
tiling)`, implemented with evk_twin::Launch, and the npu backend's trusted wrapper
(ascendc.make_ascend_module) calls it on CPU tensors, registering every region first.

Timing is modelled, never measured (npu_twin_timing); what is compiled and how g++'s errors are
summarised is npu_twin_build. `timing_kind = "modelled"` tells reports and logs to say so.

The user's settings (HarnessConfig.npu_twin: the --cce-auto-sync the check assumes) come from
`configure`, or in the sandbox from the evaluation's own request (see `_sandbox_settings`).
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any

from npu_pool.backends.ascendc import (
    kernel_translation_unit,
    load_launcher,
    make_ascend_module,
    render_ascendc_signature,
)
from npu_pool.backends.ascendc_twin.build import (
    BUILD_TIMEOUT_S,
    DEFAULT_SOC,
    HOST_TILING_CAPACITY,
    RAW_GM_FLAGS,
    SOC_JSON_FUNCTION,
    TWIN_CFLAGS,
    TWIN_INCLUDE,
    entry_declaration,
    finish,
    first_error,
    has_host_half,
    host_glue,
    launcher_translation_unit,
    op_dtype_macros,
    probe_library,
    summarize_build_errors,
    twin_headers_digest,
    unsupported_apis,
)
from npu_pool.backends.ascendc_twin.direct import (
    direct_glue,
    is_direct_program,
    refuse_stray_launch,
    rewrite_launches,
)
from npu_pool.backends.ascendc_twin.raw_sites import write_sites
from npu_pool.backends.ascendc_twin.scalar_math import scalar_math_include
from npu_pool.backends.ascendc_twin.timing import ModelledTimer, charge_unseen_traffic, peak_gflops
from npu_pool.backends.base import Backend, DevicePeaks, KernelBuildError, Timer, ToolchainMissing
from npu_pool.build_cache import cached_library, compiler_identity
from npu_pool.config import HarnessConfig, NpuTwinConfig

if TYPE_CHECKING:
    import torch

    from npu_pool.tasks.signature import KernelSignature

def twin_compiler() -> str:
    return os.environ.get("CXX") or shutil.which("g++") or "g++"


class NpuTwinBackend(Backend):
    name = "npu-twin"
    compile_routes = ("kernel",)
    kernel_language = "ascendc"
    timing_kind = "modelled"
    sandbox_env_allow = ("CXX", "EVOKERNEL_TWIN_SOC", "EVOKERNEL_TWIN_UB_KIB", "EVOKERNEL_TWIN_AI_CORES")

    def __init__(self) -> None:
        self.compiler = twin_compiler()
        # The SoC the twin models: its parameter row (twin_core.h), UB and cores overridable.
        self.soc = os.environ.get("EVOKERNEL_TWIN_SOC") or DEFAULT_SOC
        self.ub_bytes = int(os.environ.get("EVOKERNEL_TWIN_UB_KIB") or 0) * 1024
        self.ai_cores = int(os.environ.get("EVOKERNEL_TWIN_AI_CORES") or 0)
        self.launches = 0  # twin launches so far, and their modelled cost (read by ModelledTimer)
        self.modelled_us_total = 0.0
        self.last_profile: dict[str, Any] = {}
        self._soc_params: dict[str, Any] | None = None
        self.settings = NpuTwinConfig()

    def configure(self, harness: HarnessConfig) -> None:
        """Check kernels as `harness.npu_twin` says (the build options the check assumes)."""
        self.settings = harness.npu_twin

    @classmethod
    def warm_up(cls) -> None:
        # The modelled timer's dispatch mode imports torch._dynamo on its first push (1-2 CPU-s
        # a profiled verdict), and a sandboxed child that may not write the default build cache
        # would build the SoC probe library in its own temporary folder (a g++ run a verdict).
        import torch._dynamo  # noqa: F401

        compiler = twin_compiler()
        if shutil.which(compiler) is not None:
            probe_library(compiler)

    def is_available(self) -> tuple[bool, str]:
        if not (TWIN_INCLUDE / "kernel_operator.h").is_file():
            return False, f"the Ascend C twin's headers are missing ({TWIN_INCLUDE}): reinstall evokernel"
        return True, ""

    def toolchain_problem(self, candidate_format: str | None) -> str | None:
        if candidate_format in (None, "kernel") and shutil.which(self.compiler) is None:
            return f"no C++ compiler: {self.compiler} not found (install g++ or set CXX)"
        return None

    def toolchain_identity(self) -> dict[str, str]:
        return {"cxx": compiler_identity(self.compiler), "twin": twin_headers_digest()}

    @property
    def device(self) -> str:
        return "cpu"  # tensors live in host memory; the twin plays the NPU's global memory

    def synchronize(self) -> None:
        return None

    def timer(self) -> Timer:
        return ModelledTimer(self)

    def flush_cache(self) -> None:
        return None  # the modelled cost does not depend on the host's caches

    def measure_peaks(self) -> DevicePeaks:
        soc = self.soc_params()
        return DevicePeaks(gbps=soc["gm_gbps"], gflops=peak_gflops(soc),
                           method=f"modelled: the twin's {soc['name']} parameters, not a measurement")

    def peaks_identity(self) -> str:
        # The modelled chip as configured, and the table it comes from (the headers' hash).
        return f"twin:{self.soc}:ub={self.ub_bytes}:cores={self.ai_cores}:{twin_headers_digest()}"

    def soc_params(self) -> dict[str, Any]:
        """The modelled SoC's parameters, from the twin's own table (a small probe library
        built once per set of headers when no kernel library is loaded yet)."""
        if self._soc_params is None:
            probe = probe_library(self.compiler)
            self._soc_params = _configured_soc(ctypes.CDLL(str(probe)), self)
        return self._soc_params

    # --- the kernel-source format --------------------------------------------------------

    def render_kernel_signature(self, signature: KernelSignature) -> str:
        return render_ascendc_signature(signature)

    def compile_kernel(self, source: str, signature: KernelSignature, work_dir: Path, cache_dir: Path) -> Path:
        self.settings = _sandbox_settings(work_dir) or self.settings
        if shutil.which(self.compiler) is None:
            raise ToolchainMissing(f"no C++ compiler: {self.compiler} not found (install g++ or set CXX)")
        host_half = has_host_half(source)
        direct = is_direct_program(source)
        if direct:  # its own host code launches (<<<>>>); the glue runs its operator (npu_twin_direct)
            kernel = kernel_translation_unit(rewrite_launches(source), signature) + direct_glue(signature) + SOC_JSON_FUNCTION
        else:  # a host half (TilingFunc) is run through host_glue.cpp, exported for wrap_kernel
            refuse_stray_launch(source)
            kernel = kernel_translation_unit(source, signature) + host_glue(source, signature)
        launcher = launcher_translation_unit(signature)
        identity = [*TWIN_CFLAGS, *RAW_GM_FLAGS, compiler_identity(self.compiler), twin_headers_digest()]
        key = hashlib.sha256("\0".join([kernel, launcher, *identity]).encode()).hexdigest()[:24]

        launcher_key = hashlib.sha256("\0".join([launcher, *identity]).encode()).hexdigest()[:24]
        launcher_object = cache_dir / f"launcher-{launcher_key}.o"  # one per signature: a refinement reuses it

        def build(kernel_path: Path, target: Path) -> None:
            # g++ quotes a diagnostic's source line from the file `#line` names: kernel.cpp holds
            # the kernel alone, so the quoted line is the kernel's own (the unit compiled is
            # kernel_unit.cpp, whose prelude would shift it by the tiling struct's length).
            (work_dir / "kernel.cpp").write_text(source)
            # The expected entry, declared before the kernel's own definition (a forced include,
            # so the TU stays the npu backend's): another parameter list is a compile error,
            # not a launch through the wrong arguments.
            entry_check = work_dir / "entry_check.h"
            helpers = '#include "tiling/tiling_api.h"\n' if host_half else ""  # HostTiling, the library's host helpers
            # a direct-launch program's entry is its operator, and its kernels take what it passes
            entry = '#include "twin_direct.h"\n' if direct else op_dtype_macros(source, signature) + entry_declaration(signature)
            entry_check.write_text('#include "kernel_operator.h"\n' + helpers + entry + scalar_math_include(source))
            # the kernel's unit is instrumented (raw pointer accesses, twin_raw_gm.h); the launcher is not
            jobs = [([*RAW_GM_FLAGS, f"-I{TWIN_INCLUDE}", "-include", str(entry_check), "-c", str(kernel_path)],
                     work_dir / "kernel.o")]
            if not direct and not launcher_object.exists():
                launcher_path = work_dir / "launcher.cpp"
                launcher_path.write_text(launcher)
                jobs.append(([f"-I{TWIN_INCLUDE}", "-c", str(launcher_path)], work_dir / "launcher.o"))
            env = {**os.environ, "LC_ALL": "C"}  # plain ASCII quotes in diagnostics, for summarize_build_errors
            runs = [subprocess.Popen([self.compiler, *TWIN_CFLAGS, *args, "-o", str(obj)], stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, cwd=work_dir, env=env)
                    for args, obj in jobs]  # side by side: two cores
            logs = [finish(run) for run in runs]
            if runs[0].returncode != 0:
                summary = summarize_build_errors(logs[0])
                raise KernelBuildError(summary or first_error(logs[0]) or f"the kernel did not compile against the "
                                       f"Ascend C twin ({Path(self.compiler).name} exit {runs[0].returncode})", logs[0])
            if len(runs) > 1:
                if runs[1].returncode != 0:
                    raise KernelBuildError("the twin launcher did not compile", logs[1])
                tmp = cache_dir / f".{launcher_object.name}-{os.getpid()}"
                shutil.copyfile(work_dir / "launcher.o", tmp)
                os.replace(tmp, launcher_object)
            objects = [str(work_dir / "kernel.o")] + ([] if direct else [str(launcher_object)])
            link = subprocess.run([self.compiler, "-shared", "-o", str(target), *objects], capture_output=True, text=True,
                                  timeout=BUILD_TIMEOUT_S, cwd=work_dir)
            if link.returncode != 0:
                raise KernelBuildError("the kernel did not link against the twin launcher", link.stderr)
            # every raw access's kernel line, resolved now: the sealed run executes no addr2line
            write_sites(target, cache_dir / f"kernel-{key}.so.sites")

        return cached_library(cache_dir, key, work_dir, "kernel_unit.cpp", kernel, build)

    def wrap_kernel(self, artifact: Path, signature: KernelSignature, reference: torch.nn.Module) -> torch.nn.Module:
        try:
            launch = load_launcher(artifact, signature)
            lib = _bind_runtime(launch._evokernel_lib)
        except (OSError, AttributeError) as exc:
            raise KernelBuildError(f"cannot load aclrtlaunch_{signature.function} from the twin library: {exc}") from exc
        self._soc_params = _configured_soc(lib, self)
        lib.evk_twin_reset()
        lib.evk_twin_set_auto_sync(1 if self.settings.auto_sync else 0)

        tensor_bytes = [0]  # the launch's tensors (inputs and outputs): the least it must move

        def register(name: str, tensor: Any, access: int, guard: tuple[int, int]) -> None:
            nbytes = tensor.numel() * tensor.element_size()
            lib.evk_twin_register(tensor.data_ptr(), nbytes, name.encode(), access)
            if any(guard):  # its guard bands (bytes before, after): raw accesses there are gm-bounds faults
                lib.evk_twin_guard(tensor.data_ptr(), *guard)
            if name not in ("workspace", "tiling"):
                tensor_bytes[0] += nbytes

        last_fault = [""]

        def launch_and_account(block_dim: int, *args: Any) -> int:
            try:
                status = launch(block_dim, *args)
                self.last_profile = json.loads(lib.evk_twin_profile_json().decode() or "{}")
                last_fault[0] = lib.evk_twin_fault().decode()
            finally:
                lib.evk_twin_reset()  # the next launch registers its own regions
                needed, tensor_bytes[0] = tensor_bytes[0], 0
            if status == 0:
                charge_unseen_traffic(self.last_profile, needed, block_dim)
                self.launches += 1
                self.modelled_us_total += float(self.last_profile.get("modelled_us", 0.0))
            return status

        def explain(status: int) -> str:
            return last_fault[0] or f"the twin launch of {signature.function} returned {status}"

        return make_ascend_module(launch_and_account, signature, reference, self.device,
                                  int(self._soc_params["ai_cores"]), None, False, register=register, explain=explain,
                                  host_tiling=_host_tiling(lib, int(self._soc_params["ai_cores"])), guard_inputs=True)


def _sandbox_settings(work_dir: Path) -> NpuTwinConfig | None:
    """The npu_twin settings of the evaluation this build is for, in the sandbox: the worker is
    handed its HarnessConfig in the request the sandbox writes into its folder (npu_pool.protocol.
    WorkerRequest, `request.json`) and gives the backend none of it, so the twin reads its own
    section there, before any candidate code runs. None outside a sandbox (`configure` decides)."""
    try:
        request = json.loads((work_dir / "request.json").read_text())
        return NpuTwinConfig.model_validate(request["config"].get("npu_twin", {}))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _host_tiling(lib: Any, core_num: int) -> Any:
    """The candidate's host half (TilingFunc through host_glue.cpp), or None for the kernel-only
    form: KernelTiling bytes in; the kernel's tiling bytes, block count and user workspace out."""
    try:
        run = lib.evk_host_tiling
    except AttributeError:
        return None
    run.restype = ctypes.c_int
    run.argtypes = [ctypes.c_char_p, ctypes.c_uint32, ctypes.c_void_p, ctypes.c_uint32, ctypes.POINTER(ctypes.c_uint32),
                    ctypes.POINTER(ctypes.c_uint32), ctypes.POINTER(ctypes.c_uint64), ctypes.c_char_p, ctypes.c_uint32]

    def host_tiling(shapes: bytes) -> tuple[bytes, int, int]:
        out = ctypes.create_string_buffer(HOST_TILING_CAPACITY)
        error = ctypes.create_string_buffer(1024)
        size, block_dim, workspace = ctypes.c_uint32(), ctypes.c_uint32(), ctypes.c_uint64()
        status = run(shapes, core_num, out, HOST_TILING_CAPACITY, ctypes.byref(size), ctypes.byref(block_dim),
                     ctypes.byref(workspace), error, len(error))
        if status:
            raise RuntimeError(error.value.decode(errors="replace") or f"the host half returned {status}")
        return out.raw[: size.value], block_dim.value, workspace.value

    return host_tiling


def _bind_runtime(lib: Any) -> Any:
    lib.evk_twin_configure.argtypes = [ctypes.c_uint64, ctypes.c_uint32, ctypes.c_char_p]
    lib.evk_twin_configure.restype = None
    lib.evk_twin_reset.restype = None
    lib.evk_twin_register.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_char_p, ctypes.c_int]
    lib.evk_twin_register.restype = None
    lib.evk_twin_guard.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint64]
    lib.evk_twin_guard.restype = None
    lib.evk_twin_set_auto_sync.argtypes = [ctypes.c_int]
    lib.evk_twin_set_auto_sync.restype = None
    lib.evk_twin_fault.restype = ctypes.c_char_p
    lib.evk_twin_profile_json.restype = ctypes.c_char_p
    lib.evk_twin_soc_json.restype = ctypes.c_char_p
    return lib


def _configured_soc(lib: Any, backend: NpuTwinBackend) -> dict[str, Any]:
    lib = _bind_runtime(lib)
    lib.evk_twin_configure(backend.ub_bytes, backend.ai_cores, backend.soc.encode())
    return json.loads(lib.evk_twin_soc_json().decode())


__all__ = ["TWIN_INCLUDE", "ModelledTimer", "NpuTwinBackend", "launcher_translation_unit", "summarize_build_errors",
           "unsupported_apis"]
