"""The npu-twin backend around its verdicts: what its bank is seeded with, the roofline peaks it
caches per modelled chip, and what the sandbox's warm server does for it before forking. No
kernel is built here (test_backend_npu_twin.py builds and judges them)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from npu_pool import harness_cache
from npu_pool.backends.ascendc_twin.backend import NpuTwinBackend
from tests.npu_pool.harness_support import ROOT


def test_the_npu_bundle_seeds_npu_twin_banks_with_what_the_twin_supports():
    from memory_actor.seeding import bundle_items

    npu, twin = bundle_items("npu"), bundle_items("npu-twin")
    names = {item.name for item in twin}
    assert {item.backend for item in twin} == {"npu-twin"}
    assert not names & {"torch_npu", "torch.npu.Event", "GET_TILING_DATA", "Mmad"}
    for family in ("elementwise", "row_reduction", "softmax_norm", "matmul", "window", "scan"):
        assert f"example_{family}" in names, family  # the family kernels (bundles/examples.yaml's tasks)
    assert {item.id for item in twin}.isdisjoint({item.id for item in npu})  # a bank can hold both


def test_cached_peaks_follow_the_modelled_soc(tmp_path, monkeypatch):
    """Switching EVOKERNEL_TWIN_SOC (or its UB/core overrides) needs no cache removed by hand:
    the roofline's cached peaks are keyed by the modelled chip."""
    from npu_pool.gates.roofline import device_peaks

    path = tmp_path / "device_peaks.json"
    peaks = {}
    for soc, cores in (("Ascend910B1", ""), ("Ascend310P", ""), ("Ascend910B1", "4"), ("Ascend910B1", "")):
        monkeypatch.setenv("EVOKERNEL_TWIN_SOC", soc)
        monkeypatch.setenv("EVOKERNEL_TWIN_AI_CORES", cores)
        backend = NpuTwinBackend()
        peaks[(soc, cores)] = device_peaks(backend, path)
        assert peaks[(soc, cores)] == backend.measure_peaks(), (soc, cores)
    assert peaks[("Ascend910B1", "")].gbps == 1600 and peaks[("Ascend310P", "")].gbps == pytest.approx(204.8)
    assert "Ascend310P" in peaks[("Ascend310P", "")].method
    assert peaks[("Ascend910B1", "4")].gflops < peaks[("Ascend910B1", "")].gflops  # 4 of 24 cores
    assert len(harness_cache.load(path)) == 3  # one entry per modelled chip


def test_the_warm_server_warms_up_what_every_twin_verdict_would_redo(tmp_path):
    # Run in the sandbox's warm server before it forks: the dispatch mode's torch._dynamo import
    # and the SoC probe library in the default cache (a child that may not write there built
    # one in its own temporary folder, every profiled verdict).
    script = ("import sys; from npu_pool.backends.ascendc_twin.backend import NpuTwinBackend; "
              "assert 'torch._dynamo' not in sys.modules; NpuTwinBackend.warm_up(); "
              "assert 'torch._dynamo' in sys.modules")
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert list((tmp_path / "evokernel" / "build" / "twin").glob("probe-*.so"))
