"""A drop-in ModelNew's build recovers from a build killed midway (issue 45.2): torch's lock left
in the build folder would make every later load_inline of that source wait for good, so the
drop-in builds under a spare name instead. (Inside `evokernel verify` the harness's own build
cache handles it: tests/npu_pool/test_build_cache.py.)"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from launch.kernel_dropin import render_dropin
from launch.kernel_files import kernel_task
from npu_pool.antihack import check_python_candidate
from npu_pool.tasks.spec import load_task

ROOT = Path(__file__).resolve().parents[2]
RELU = ROOT / "suites" / "cpu" / "level1" / "4_ReLU.py"
CODE = """#include <cstdint>
extern "C" void kernel(const float* x, float* out, int64_t x_d0, int64_t x_d1, int64_t out_d0, int64_t out_d1) {
    for (int64_t i = 0; i < x_d0 * x_d1; ++i) out[i] = x[i] > 0.0f ? x[i] : 0.0f;
}
"""
# Runs a drop-in three times with load_inline replaced by a recorder of the name it was asked
# to build; after each, leaves torch's lock in that name's folder, as a build killed midway does
# (one process: torch is imported once).
RECORD_NAMES = r"""
import json, os, sys, types
from pathlib import Path
import torch.utils.cpp_extension as ce
asked = []
ce.load_inline = lambda *a, **kw: asked.append(kw["name"]) or types.SimpleNamespace(evokernel_launch=None)
for _ in range(3):
    exec(compile(open(sys.argv[1]).read(), sys.argv[1], "exec"), {"__name__": "dropin"})
    folder = Path(os.environ["TORCH_EXTENSIONS_DIR"]) / asked[-1]
    folder.mkdir(exist_ok=True)
    (folder / "lock").write_text("")
print(json.dumps(asked))
"""
# Imports a drop-in for real (load_inline builds it) and runs it once.
RUN = r"""
import sys, torch
module = {"__name__": "dropin"}
exec(compile(open(sys.argv[1]).read(), sys.argv[1], "exec"), module)
x = torch.randn(4, 8)
assert torch.equal(module["ModelNew"]()(x), torch.relu(x))
print("OK")
"""


@pytest.fixture(scope="module")
def dropin(tmp_path_factory) -> Path:
    task = kernel_task(load_task(RELU, max_bytes=2**20), "cpu", "kernel")
    text = render_dropin(task="4_ReLU", which="best", code=CODE, signature=task.signature,
                         reference_source=task.reference_source, output_dims=task.output_dims, backend="cpu",
                         note="a test")
    assert not [f for f in check_python_candidate(text) if f.severity == "reject"]
    path = tmp_path_factory.mktemp("dropin") / "best_modelnew.py"
    path.write_text(text)
    return path


def _python(script: str, dropin: Path, extensions: Path, **kwargs) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    return subprocess.Popen([sys.executable, "-I", "-c", script, str(dropin)], env=env | {"TORCH_EXTENSIONS_DIR": str(extensions)},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True, **kwargs)


def _asked_names(dropin: Path, extensions: Path) -> list[str]:
    extensions.mkdir(exist_ok=True)
    out, err = _python(RECORD_NAMES, dropin, extensions).communicate(timeout=300)
    assert out.strip(), err[-2000:]
    return json.loads(out.strip().splitlines()[-1])


def test_a_lock_left_by_a_killed_build_sends_the_build_to_a_spare_name(dropin, tmp_path):
    first, *spares = _asked_names(dropin, tmp_path)
    assert first.startswith("evokernel_4_ReLU_") and "_r" not in first.removeprefix("evokernel_4_ReLU_")
    assert spares == [f"{first}_r1", f"{first}_r2"]


@pytest.mark.slow  # two real load_inline builds (about a minute each)
@pytest.mark.timeout(1500)
def test_a_build_killed_with_kill_9_midway_does_not_stall_the_next(dropin, tmp_path):
    name = _asked_names(dropin, tmp_path / "names")[0]  # the name a build asks for where no lock is left
    first = _python(RUN, dropin, tmp_path)
    deadline = time.monotonic() + 600
    while not (tmp_path / name / "lock").exists():
        assert first.poll() is None and time.monotonic() < deadline, first.communicate()[1][-2000:]
        time.sleep(0.1)
    time.sleep(2.0)  # the compiler is running
    os.killpg(first.pid, signal.SIGKILL)
    first.communicate()
    assert (tmp_path / name / "lock").exists()  # torch's lock stays: the stall this test is about
    started = time.monotonic()
    out, err = _python(RUN, dropin, tmp_path).communicate(timeout=900)
    assert out.strip().endswith("OK"), err[-3000:]
    print(f"the build after the killed one: {time.monotonic() - started:.1f} s")
