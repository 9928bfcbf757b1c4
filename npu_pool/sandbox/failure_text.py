"""What a failed candidate's text says, read by the sandboxed worker (npu_pool/sandbox/worker.py):
an infrastructure failure a message names, the device check before any candidate code, and the
first diagnostics of a compiler log."""

from __future__ import annotations

import re
from typing import Any

# Messages of device runtimes and toolchains that failed to start: the machine's fault, not the
# candidate's. Matched only where no candidate code has run yet (startup, the device probe) or
# where the harness's own check confirms the toolchain is missing (compile).
INFRA_PATTERNS = (
    ("toolchain_missing", re.compile(r"CUDA_HOME environment variable is not set|nvcc not found|"
                                     r"CANN toolkit not found|cmake not found", re.IGNORECASE)),
    ("device_unavailable", re.compile(r"no CUDA-capable device|Torch not compiled with CUDA|Found no NVIDIA driver|"
                                      r"no backend available|cannot run here|no Ascend NPU visible|"
                                      r"torch_npu is not installed", re.IGNORECASE)),
    ("device_init", re.compile(r"initialization error|CUDA driver initialization failed|"
                               r"driver version is insufficient|cudaGetDeviceCount|CUDA driver|"
                               r"aclInit|ACL error|aclrt\w+ failed|drvErr|NPU function error|"
                               r"(init|initiali[sz]e) (npu|device)", re.IGNORECASE)),
)


def infra_category(text: str) -> str | None:
    """The infrastructure failure a message names (`toolchain_missing`, `device_unavailable`,
    `device_init`), or None."""
    for category, pattern in INFRA_PATTERNS:
        if pattern.search(text):
            return category
    return None


def device_problem(backend: Any, candidate_format: str, torch: Any) -> tuple[str, str] | None:
    """(category, why) when this backend's device or the format's toolchain cannot be used here,
    else None. Runs before any candidate code: every failure here is the machine's."""
    ready, why = backend.ready(candidate_format)
    if not ready:
        return infra_category(why) or "backend_unavailable", f"the {backend.name} backend cannot run here: {why}"
    try:
        if hasattr(backend, "select"):
            backend.select()
        torch.ones(1, device=backend.device).add_(1)
        backend.synchronize()
    except Exception as exc:
        text = f"{type(exc).__name__}: {exc}"
        return infra_category(text) or "device_init", f"the {backend.device} device did not start: {text.splitlines()[0][:300]}"
    return None


def first_compiler_errors(log: str, limit: int = 12) -> str:
    """The first diagnostics of a compiler log (`file:line:col: error: ...` and the source
    lines after each), without the build commands that surround them."""
    lines = log.splitlines()
    picked: list[str] = []
    for i, line in enumerate(lines):
        if re.search(r":\d+:(\d+:)? (fatal )?error:", line):
            picked.extend(lines[i: i + 3])
        if len(picked) >= limit:
            break
    if not picked:  # no diagnostics in the usual shape: the error lines, then the end
        picked = [line for line in lines if re.search(r"\berror\b", line, re.IGNORECASE)][:limit // 2]
        picked += lines[-(limit // 2):]
    return "\n".join(line[:400] for line in picked[:limit])
