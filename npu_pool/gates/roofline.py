"""Roofline hint: achieved bandwidth and throughput against the device's measured peaks."""

from __future__ import annotations

import os
import platform
from pathlib import Path

from npu_pool import harness_cache
from npu_pool.backends.base import Backend, DevicePeaks
from npu_pool.paths import cache_root


def peaks_path() -> Path:
    return cache_root() / "device_peaks.json"


def device_peaks(backend: Backend, path: Path | None = None) -> DevicePeaks:
    """The backend's peaks, measured once per machine and device (or modelled chip) and
    cached as JSON."""
    path = path or peaks_path()
    key = f"{backend.name}:{platform.node()}:{backend.peaks_identity()}:{os.cpu_count()}"
    cached = harness_cache.load(path)
    if key in cached:
        return DevicePeaks(**cached[key])
    peaks = backend.measure_peaks()
    harness_cache.record(path, key, {"gbps": peaks.gbps, "gflops": peaks.gflops, "method": peaks.method})
    return peaks


def analyse(flops: int, tensor_bytes: int, output_elements: int, median_ms: float,
            peaks: DevicePeaks) -> tuple[float, float, str, list[str]]:
    """(achieved GB/s, achieved GFLOP/s, memory|compute, hints) for one timed kernel.

    Bytes are the minimum traffic (every input, parameter and output once); operations are
    the FLOPs torch's FlopCounterMode counts, or one per output element where it counts none
    (elementwise and reduction kernels).
    """
    seconds = max(median_ms, 1e-6) / 1e3
    ops = flops if flops > 0 else output_elements
    gbps, gflops = tensor_bytes / seconds / 1e9, ops / seconds / 1e9
    ridge = peaks.gflops / peaks.gbps  # FLOP per byte where the two roofs meet
    intensity = ops / max(tensor_bytes, 1)
    bound = "compute" if intensity > ridge else "memory"
    hints = []
    if bound == "memory":
        hints.append(f"memory-bound ({intensity:.2f} FLOP/byte < ridge {ridge:.1f}): "
                     f"{gbps:.1f} GB/s of {peaks.gbps:.1f} GB/s measured peak ({100 * gbps / peaks.gbps:.0f}%)")
        if gbps < 0.5 * peaks.gbps:
            hints.append("far from the bandwidth roof: vectorise, parallelise over cores, stream contiguous memory")
    else:
        hints.append(f"compute-bound ({intensity:.1f} FLOP/byte > ridge {ridge:.1f}): "
                     f"{gflops:.1f} GFLOP/s of {peaks.gflops:.1f} GFLOP/s measured peak ({100 * gflops / peaks.gflops:.0f}%)")
        if gflops < 0.5 * peaks.gflops:
            hints.append("far from the compute roof: block for cache reuse, vectorise the inner loop, use all cores")
    if flops == 0:
        hints.append("operation count estimated as one per output element (no matmul/conv FLOPs counted)")
    return gbps, gflops, bound, hints
