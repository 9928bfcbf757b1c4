"""The CPU backend: load_inline C++ for ModelNew candidates, g++ for the kernel format."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from npu_pool.backends.base import Backend, DevicePeaks, KernelBuildError, Timer
from npu_pool.build_cache import cached_library, compiler_identity, host_target

if TYPE_CHECKING:
    import torch

    from npu_pool.tasks.signature import KernelSignature

KERNEL_CFLAGS = ("-O3", "-march=native", "-fopenmp", "-shared", "-fPIC", "-std=c++17")
KERNEL_PRELUDE = """#include <cstdint>
#include <cstddef>
#include <cmath>
#include <cstring>
#include <algorithm>
#include <numeric>
#include <limits>
#include <omp.h>
"""


# Bound at import, before any candidate code runs, so a candidate patching time.* cannot
# change what the profiler reads.
_clock_ns = time.perf_counter_ns


class ClockTimer(Timer):
    """Monotonic wall clock: CPU kernels run synchronously on the calling thread."""

    def __init__(self) -> None:
        self._start = self._stop = 0

    def start(self) -> None:
        self._start = _clock_ns()

    def stop(self) -> None:
        self._stop = _clock_ns()

    def elapsed_ms(self) -> float:
        return (self._stop - self._start) / 1e6


# A flush writes twice the last-level cache, up to this. Past it, the write cost more than the calls
# it cleared: on a 480 MiB L3 (a 2-core Xeon VM) each flush took 0.39 s, 100 of them per profile
# (50 timed trials, candidate and eager), and 960 MiB of the candidate's memory; capped, a task's data
# may stay in such a cache between calls, for the candidate and the eager reference alike.
FLUSH_MAX_BYTES = 128 * 2**20


def flush_buffer_bytes(cache_dir: Path = Path("/sys/devices/system/cpu/cpu0/cache")) -> int:
    return min(2 * _last_level_cache_bytes(cache_dir), FLUSH_MAX_BYTES)


def _last_level_cache_bytes(cache_dir: Path) -> int:
    for index in sorted(cache_dir.glob("index*"), reverse=True):
        try:
            text = (index / "size").read_text().strip()
        except OSError:
            continue
        scale = {"K": 2**10, "M": 2**20, "G": 2**30}.get(text[-1:], 1)
        return int(text.rstrip("KMG")) * scale
    return 32 * 2**20


def _load_inline_compiler() -> str:
    from torch.utils.cpp_extension import get_cxx_compiler

    return get_cxx_compiler()


class CpuBackend(Backend):
    name = "cpu"
    compile_routes = ("modelnew", "kernel")
    kernel_language = "cpp"
    sandbox_env_allow = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "CC", "CXX")

    def __init__(self) -> None:
        self._flush_buffer: torch.Tensor | None = None
        self.compiler = os.environ.get("CXX") or shutil.which("g++") or "g++"

    def is_available(self) -> tuple[bool, str]:
        return True, ""

    def toolchain_problem(self, candidate_format: str | None) -> str | None:
        if candidate_format == "kernel" and shutil.which(self.compiler) is None:
            return f"no C++ compiler: {self.compiler} not found (install g++ or set CXX)"
        if candidate_format == "modelnew":
            compiler = _load_inline_compiler()
            if shutil.which(compiler) is None:
                return f"no C++ compiler for load_inline: {compiler} not found (install g++ or set CXX)"
        return None

    def toolchain_identity(self) -> dict[str, str]:
        """load_inline's compiler (its `--version` line) and what `-march=native` means here."""
        compiler = _load_inline_compiler()
        return {"cxx": compiler_identity(compiler), "target": host_target(compiler)}

    @property
    def device(self) -> str:
        return "cpu"

    def synchronize(self) -> None:
        return None

    def timer(self) -> Timer:
        return ClockTimer()

    def flush_cache(self) -> None:
        import torch

        if self._flush_buffer is None:
            self._flush_buffer = torch.empty(flush_buffer_bytes(), dtype=torch.uint8)
        self._flush_buffer.fill_(int(_clock_ns()) & 0xFF)

    def measure_peaks(self) -> DevicePeaks:
        import torch

        n = 32 * 2**20  # 128 MiB of float32 per operand: far beyond the caches
        a, b = torch.rand(n), torch.empty(n)
        best_copy = min(_timed(lambda: b.copy_(a)) for _ in range(5))
        m = 1024
        x, y = torch.rand(m, m), torch.rand(m, m)
        best_mm = min(_timed(lambda: torch.mm(x, y)) for _ in range(5))
        return DevicePeaks(gbps=2 * 4 * n / best_copy / 1e9, gflops=2 * m**3 / best_mm / 1e9,
                           method="best of 5: 128 MiB float32 copy; 1024^3 float32 matmul")

    def load_inline_defaults(self) -> dict[str, Any]:
        return {"use_pch": True}

    def render_kernel_signature(self, signature: KernelSignature) -> str:
        return signature.render_c()

    def compile_kernel(self, source: str, signature: KernelSignature, work_dir: Path, cache_dir: Path) -> Path:
        full = KERNEL_PRELUDE + signature.declaration() + "\n#line 1 \"kernel.cpp\"\n" + source
        identity = [*KERNEL_CFLAGS, compiler_identity(self.compiler), host_target(self.compiler)]  # -march=native
        key = hashlib.sha256("\0".join([full, *identity]).encode()).hexdigest()[:24]

        def build(src: Path, target: Path) -> None:
            try:
                done = subprocess.run([self.compiler, *KERNEL_CFLAGS, "-o", str(target), str(src)],
                                      capture_output=True, text=True, timeout=300, cwd=work_dir)
            except subprocess.TimeoutExpired as exc:
                raise KernelBuildError("compiler timed out after 300 s") from exc
            if done.returncode != 0:
                raise KernelBuildError(f"the kernel did not compile ({Path(self.compiler).name} exit "
                                       f"{done.returncode})", done.stderr)

        return cached_library(cache_dir, key, work_dir, "kernel_full.cpp", full, build)

    def wrap_kernel(self, artifact: Path, signature: KernelSignature, reference: torch.nn.Module) -> torch.nn.Module:
        from npu_pool.backends.kernel_wrapper import KernelModule, load_entry

        try:
            entry = load_entry(artifact, signature)
        except (OSError, AttributeError) as exc:
            raise KernelBuildError(f"cannot load {signature.function} from the compiled library: {exc}") from exc
        return KernelModule(entry, signature, reference, self.device)


def _timed(fn: Any) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start
