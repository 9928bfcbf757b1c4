"""The backend protocol: what the harness needs from a device (cpu, cuda, npu).

A backend says whether it can run here, names the torch device, synchronises and times
work on it, flushes its caches between timed trials, measures its peaks once, and owns
the kernel-source format of its device: how the one function the LLM writes is rendered
for the prompt, compiled, and wrapped into a `ModelNew`-like module (trusted code).
Backends live one per module and are registered by module name in `backends/__init__.py`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    import torch

    from npu_pool.tasks.signature import KernelSignature


class KernelBuildError(Exception):
    """The kernel source did not compile or load; `log` holds the compiler output."""

    def __init__(self, message: str, log: str = ""):
        super().__init__(message)
        self.log = log


class ToolchainMissing(KernelBuildError):
    """The toolchain a build needs is not installed here: an infrastructure failure, never
    the candidate's (the verdict's gate is `infra`)."""


class Timer(ABC):
    """Times one region of device work: start(), the work, stop(), then elapsed_ms()."""

    @abstractmethod
    def start(self) -> None: ...

    @abstractmethod
    def stop(self) -> None: ...

    @abstractmethod
    def elapsed_ms(self) -> float:
        """Milliseconds between start and stop; waits for the device when it must."""

    def lingering_ms(self) -> float:
        """How long the device stayed busy after the timed region's end (work the region
        launched on other streams, which its end marker does not wait for); 0 where the
        clock itself waits for all work (the CPU)."""
        return 0.0


@dataclass(frozen=True)
class DevicePeaks:
    """Measured peaks of one device, for the roofline hint."""

    gbps: float  # sustained memory bandwidth, GB/s
    gflops: float  # sustained float32 throughput, GFLOP/s
    method: str  # how they were measured, for the report


class Backend(ABC):
    """One device kind. Subclasses set the class attributes and implement the methods."""

    name: ClassVar[str]
    # Candidate formats this backend can compile: "modelnew" (load_inline or similar)
    # and "kernel" (the derived entry point, compiled by the backend's own toolchain).
    compile_routes: ClassVar[tuple[str, ...]]
    # The language of its kernel-source format, passed to the anti-hack checker.
    kernel_language: ClassVar[str]
    # Environment variables the sandboxed worker may keep (beyond the common allowlist).
    sandbox_env_allow: ClassVar[tuple[str, ...]] = ()
    # What its timer reports: "measured" on a device, "modelled" where the cost is computed
    # from counted work (the Ascend C twin); reports and logs label latencies with it.
    timing_kind: ClassVar[str] = "measured"
    # Whether its sandboxed runner may live in a PID namespace of its own (else a subreaper
    # sweeps the candidate's processes): a runtime that fails there says so here.
    pid_namespace: ClassVar[bool] = True

    @classmethod
    def warm_up(cls) -> None:
        """Run once in the warm sandbox server, before it forks verdict children: import or build
        what every child would otherwise redo. Nothing that touches a device runtime (it does
        not survive fork); the default does nothing."""
        return None

    @abstractmethod
    def is_available(self) -> tuple[bool, str]:
        """(True, "") when this backend can run here, else (False, why not)."""

    def toolchain_problem(self, candidate_format: str | None) -> str | None:
        """What is missing to build candidates of `candidate_format` here (a compiler, a
        toolkit), or None; None for `None` (any format, the device alone)."""
        return None

    def ready(self, candidate_format: str | None = None) -> tuple[bool, str]:
        """(True, "") when the device is usable and the format's toolchain is installed,
        else (False, what is missing): checked before anything is compiled."""
        available, why = self.is_available()
        if not available:
            return False, why
        problem = self.toolchain_problem(candidate_format)
        return (False, problem) if problem else (True, "")

    def toolchain_identity(self) -> dict[str, str]:
        """What determines the binaries built here besides the source and flags (device
        architecture, compiler and toolkit versions): part of every build-cache key, so a
        cache shared between machines never serves one device another's binary."""
        return {}

    @property
    @abstractmethod
    def device(self) -> str:
        """The torch device string, e.g. "cpu", "cuda:0", "npu:0"."""

    @abstractmethod
    def synchronize(self) -> None:
        """Wait until all work queued on the device has finished."""

    @abstractmethod
    def timer(self) -> Timer:
        """A fresh timer: device events on accelerators, a monotonic clock on the CPU."""

    @abstractmethod
    def flush_cache(self) -> None:
        """Evict the caches between timed trials so no trial runs on warm data."""

    @abstractmethod
    def measure_peaks(self) -> DevicePeaks:
        """Measure bandwidth and compute peaks (slow: the caller caches the result)."""

    def peaks_identity(self) -> str:
        """What the peaks belong to, beside the machine: part of their cache key. The device
        by default; a backend that models a chip (npu-twin) names the modelled chip, so
        switching it never serves another chip's peaks."""
        return self.device

    def load_inline_defaults(self) -> dict[str, Any]:
        """Extra keyword arguments for `load_inline` calls made by ModelNew candidates."""
        return {}

    # --- the kernel-source format ------------------------------------------------------

    @abstractmethod
    def render_kernel_signature(self, signature: KernelSignature) -> str:
        """The entry point the LLM must write, with one comment line per argument."""

    @abstractmethod
    def compile_kernel(self, source: str, signature: KernelSignature, work_dir: Path, cache_dir: Path) -> Path:
        """Compile the LLM's kernel source into a loadable artifact (content-addressed in
        `cache_dir`); raise KernelBuildError with the compiler log on failure."""

    @abstractmethod
    def wrap_kernel(self, artifact: Path, signature: KernelSignature, reference: torch.nn.Module) -> torch.nn.Module:
        """A module with the reference's forward signature that calls the compiled kernel,
        reading the reference's parameters and allocating NaN-filled outputs per call."""
