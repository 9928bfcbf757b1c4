"""Backend registry: one module per backend (cpu, cuda, npu, npu-twin) behind one protocol.

Backends are registered by module name and imported lazily, so a backend whose module or
toolkit is missing never breaks `import npu_pool`.

- `base` (the protocol, `Timer`, errors), `events` (device-event timing), `kernel_wrapper` (the
  trusted `ModelNew` of the kernel-source format, calling a C entry point through ctypes).
- `cpu`, `cuda` and `cuda_kernel`, `npu` (a real Ascend NPU with CANN), `ascendc` (Ascend C
  sources: what the npu backend and the twin share).
- `ascendc_twin/`: the CPU twin of Ascend C, its Python and its header-only library together.

May import: `npu_pool.tasks`, `npu_pool.build_cache`, `npu_pool.paths`, `npu_pool.antihack`.
"""

from __future__ import annotations

import importlib

from npu_pool.backends.base import Backend, DevicePeaks, KernelBuildError, Timer, ToolchainMissing

# name -> "module:Class"; detect_backend() tries them in this order.
REGISTRY: dict[str, str] = {
    "npu": "npu_pool.backends.npu:NpuBackend",
    "cuda": "npu_pool.backends.cuda:CudaBackend",
    "cpu": "npu_pool.backends.cpu:CpuBackend",
    # Ascend C on the CPU twin: chosen by name (--backend npu-twin), never auto-detected.
    "npu-twin": "npu_pool.backends.ascendc_twin.backend:NpuTwinBackend",
}
DETECTION_ORDER = ("npu", "cuda", "cpu")

_instances: dict[str, Backend] = {}


class BackendUnavailable(Exception):
    """The named backend does not exist or cannot run on this machine."""


def get_backend(name: str) -> Backend:
    """The backend called `name` ("cpu", "cuda", "npu", "npu-twin"; "auto" detects one)."""
    if name == "auto":
        return detect_backend()
    if name in _instances:
        return _instances[name]
    if name not in REGISTRY:
        raise BackendUnavailable(f"unknown backend {name!r}; known: {', '.join(REGISTRY)}")
    module_name, class_name = REGISTRY[name].split(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise BackendUnavailable(f"backend {name!r} cannot be imported: {exc}") from exc
    backend = getattr(module, class_name)()
    _instances[name] = backend
    return backend


def backend_status(name: str) -> tuple[bool, str]:
    """(available, why not) without raising."""
    try:
        return get_backend(name).is_available()
    except BackendUnavailable as exc:
        return False, str(exc)


def backend_ready(name: str, candidate_format: str | None = None) -> tuple[bool, str]:
    """(ready, what is missing) for building and running `candidate_format` candidates on
    backend `name` ("auto" detects one); `None` or "auto" checks the device alone. Never raises."""
    try:
        backend = get_backend(name)
    except BackendUnavailable as exc:
        return False, str(exc)
    fmt = None if candidate_format in (None, "auto") else candidate_format
    ready, why = backend.ready(fmt)
    return ready, (f"the {backend.name} backend cannot run here: {why}" if not ready else "")


def timing_kind(name: str | None) -> str:
    """How backend `name` times kernels: "modelled" (the Ascend C twin's counted-work cost) or
    "measured"; what reports and logs print beside a latency. Never raises."""
    if name not in REGISTRY:
        return "measured"  # "auto" and unknown names: a detected backend measures
    try:
        return get_backend(name).timing_kind
    except BackendUnavailable:
        return "measured"


def latency_unit(timing: str, *, heading: bool = False) -> str:
    """The unit beside a latency of that timing kind (timing_kind, ProfileReport.timing): "ms",
    or where the timing is modelled (the Ascend C twin computes a cost, it measures nothing)
    "ms modelled" after a number and "modelled ms" as a column heading's unit."""
    if timing != "modelled":
        return "ms"
    return "modelled ms" if heading else "ms modelled"


def detect_backend() -> Backend:
    """The first available backend of npu, cuda, cpu."""
    reasons = []
    for name in DETECTION_ORDER:
        available, why = backend_status(name)
        if available:
            return get_backend(name)
        reasons.append(f"{name}: {why}")
    raise BackendUnavailable("no backend available (" + "; ".join(reasons) + ")")


__all__ = [
    "Backend",
    "BackendUnavailable",
    "DevicePeaks",
    "KernelBuildError",
    "Timer",
    "ToolchainMissing",
    "REGISTRY",
    "backend_ready",
    "backend_status",
    "detect_backend",
    "get_backend",
    "timing_kind",
]
