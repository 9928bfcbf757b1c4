"""A warm sandbox server never asks the accelerator driver anything before it forks: CUDA's
and CANN's state does not survive a fork (the children would fail with CUDA's
"initialization error"). Its preload runs here as on a CUDA build of torch, with the runtime
call that runs cuInit (cudaGetDeviceCount, behind torch.cuda.is_available and device_count)
and the explicit initialisers made to fail."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from ..harness_support import ROOT

PROBE = """
import torch, torch.cuda
torch.version.cuda = torch.version.cuda or "13.0"  # as a CUDA build of torch (this one may be CPU-only)
torch.cuda._is_compiled = lambda: True
def refuse(*args, **kwargs):
    raise SystemExit("the warm server asked the CUDA driver")
torch._C._cuda_getDeviceCount = refuse
for name in ("init", "_lazy_init", "set_device", "get_device_capability", "get_device_properties", "mem_get_info"):
    setattr(torch.cuda, name, refuse)
from npu_pool.sandbox import warm_worker
warm_worker._preload(sys.argv[1])
assert not torch.cuda.is_initialized()
print("preloaded", sys.argv[1])
"""


@pytest.mark.parametrize("backend", ["cuda", "npu"])
def test_preload_never_touches_the_driver(backend):
    done = subprocess.run([sys.executable, "-c", "import sys\n" + PROBE, backend], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"preloaded {backend}" in done.stdout


@pytest.mark.parametrize("action", [
    "import torch.utils.cpp_extension",  # what the server did before: its import asks is_available()
    "from npu_pool.backends import get_backend; get_backend('cuda')",  # constructing the backend asks too
])
def test_the_probe_catches_a_driver_query(action, tmp_path):
    if not (shutil.which("nvcc") or os.environ.get("CUDA_HOME")) and action.startswith("import torch.utils"):
        pytest.skip("torch.utils.cpp_extension asks the driver only where it finds a CUDA toolkit")
    code = "import sys\n" + PROBE.replace("warm_worker._preload(sys.argv[1])", action)
    done = subprocess.run([sys.executable, "-c", code, "cuda"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "asked the CUDA driver" in done.stderr
