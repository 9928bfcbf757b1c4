"""`evokernel export RUN_DIR --layout cann` (issue 66.3): each Ascend C kernel of a run becomes a
CANN kernel launch project, and the twin builds and runs that same project on the CPU (its
direct-launch form): what the user receives is what was checked. The run folders are written by
the run's own writers (launch.kernel_files.KernelFolder, RunSummary); the projects are built by
g++ against the twin (npu_pool.backends.ascendc_twin.project)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from actors.messages import Attempt
from launch.cli import main
from launch.config import load_settings
from launch.kernel_export import export_kernels
from launch.kernel_files import KernelFolder, kernel_task
from launch.run_summary import RunSummary
from npu_pool.backends.ascendc_twin.project import FAULT_EXIT, run_project
from npu_pool.paths import cache_root
from npu_pool.tasks.spec import load_task
from tests.npu_pool.harness_support import SMALL_BYTES, SUITE

ROOT = Path(__file__).resolve().parents[2]
CANDIDATES = ROOT / "tests" / "npu_pool" / "candidates" / "npu_twin"
SCALAR_TOUCH = ROOT / "tests" / "npu_pool" / "backends" / "ascendc_twin" / "kernels" / "settings" / "relu_scalar_touch.cpp"

BUILDS = cache_root() / "twin-tests" / "projects"  # beside the twin tests' libraries

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="the Ascend C twin needs g++")


@pytest.fixture(scope="module")
def relu_task():
    return load_task(SUITE / "level1" / "4_ReLU.py", max_bytes=SMALL_BYTES // 16)


def make_run(run_dir: Path, task, kernel: Path, backend: str = "npu-twin", auto_sync: bool = True) -> Path:
    """A run folder as `evokernel run` leaves it: the kernel kept as 4_ReLU's best, and the settings."""
    folder = KernelFolder(run_dir)
    folder.operator_started(kernel_task(task, backend, "kernel"))
    folder.record(Attempt(run_id="r1", task=task.task_id, iteration=2, stage="refine", feasible=True, gate="ok",
                          latency_ms=0.0123, attempt_id="a2", code=kernel.read_text()))
    settings = load_settings(overrides={"harness": {"backend": backend, "npu_twin": {"auto_sync": auto_sync}}})
    RunSummary(run_id="r1", settings=settings.redacted()).write(run_dir)
    return run_dir


def export(run_dir: Path, out: Path) -> Path:
    assert main(["export", str(run_dir), "--layout", "cann", "--out", str(out)]) == 0
    return out / "4_ReLU"


def test_the_exported_project_is_what_was_checked_and_runs_on_the_twin(tmp_path, relu_task, capsys):
    kernel = CANDIDATES / "relu_good.cpp"
    project = export(make_run(tmp_path / "run", relu_task, kernel), tmp_path / "out")
    assert "(cann layout)" in capsys.readouterr().out
    assert (project / "kernel.cpp").read_bytes() == kernel.read_bytes()  # byte for byte as verified
    batch, dim = relu_task.sizes["batch_size"], relu_task.sizes["dim"]
    x = np.fromfile(project / "input" / "x.bin", dtype=np.float32)
    golden = np.fromfile(project / "output" / "golden_out.bin", dtype=np.float32)
    assert x.size == golden.size == batch * dim and (x < 0).any()
    np.testing.assert_array_equal(golden, np.maximum(x, 0))  # the task's reference at the verified sizes
    tiling = np.fromfile(project / "input" / "tiling.bin", dtype=np.uint8)
    sizes = tiling[:32].view(np.int64)  # KernelTiling: x_d0, x_d1, out_d0, out_d1, then block_dim
    assert list(sizes) == [batch, dim, batch, dim] and tiling[32:36].view(np.uint32)[0] == 24
    cmake = (project / "CMakeLists.txt").read_text()
    assert 'set(SOC_VERSION "Ascend910B1"' in cmake and "ascendc_library(kernels STATIC kernel_unit.cpp)" in cmake
    assert "ascendc_compile_options(kernels PRIVATE --cce-auto-sync)" in cmake
    assert "constexpr uint32_t kBlockDim = 24;" in (project / "main.cpp").read_text()
    commands = [line for line in (project / "run.sh").read_text().splitlines() if not line.startswith("#")]
    assert len(commands) == 1 and "cmake --build build" in commands[0]
    readme = (project / "README.md").read_text()
    assert "    source /usr/local/Ascend/ascend-toolkit/set_env.sh" in readme and "    bash run.sh" in readme
    index = json.loads((tmp_path / "out" / "index.json").read_text())
    assert index["layout"] == "cann" and index["kernels"][0]["project"] == "4_ReLU"

    run = run_project(project, cache=BUILDS)
    assert run.passed and run.stdout.endswith("[evokernel] PASS\n"), run.stdout + run.stderr
    assert "out: 0 of" in run.stdout
    np.testing.assert_array_equal(np.fromfile(project / "output" / "out.bin", dtype=np.float32), golden)


def test_a_wrong_kernel_fails_its_projects_comparison(tmp_path, relu_task):
    project = export(make_run(tmp_path / "run", relu_task, CANDIDATES / "relu_wrong.cpp"), tmp_path / "out")
    run = run_project(project, cache=BUILDS)
    assert run.returncode == 1 and "[evokernel] FAIL" in run.stdout, run.stdout + run.stderr


def test_the_auto_sync_setting_travels_into_the_project(tmp_path, relu_task):
    # checked as built with --cce-auto-sync=off: the CMake says so, and the twin reads it back
    project = export(make_run(tmp_path / "run", relu_task, SCALAR_TOUCH, auto_sync=False), tmp_path / "out")
    cmake = project / "CMakeLists.txt"
    assert "ascendc_compile_options(kernels PRIVATE --cce-auto-sync=off)" in cmake.read_text()
    run = run_project(project, cache=BUILDS)
    assert run.returncode == FAULT_EXIT and run.fault.startswith("twin fault [pipe-race]: LocalTensor::GetValue"), run
    assert "--cce-auto-sync=off" in run.fault
    cmake.write_text(cmake.read_text().replace("--cce-auto-sync=off", "--cce-auto-sync"))  # CANN's default build
    assert run_project(project, cache=BUILDS).passed


def test_forms_a_kernel_launch_project_cannot_hold_are_left_out(tmp_path, relu_task):
    for name, backend in (("relu_host", "npu-twin"), ("relu_direct", "npu-twin"), ("relu_good", "cpu")):
        run_dir = make_run(tmp_path / name, relu_task, CANDIDATES / f"{name}.cpp", backend=backend)
        done = export_kernels(run_dir, tmp_path / f"out-{name}", "cann")
        assert done.written == [] and len(done.skipped) == 1, done
        why = done.skipped[0]
        assert why.startswith("4_ReLU: ") and {"relu_host": "a host half (TilingFunc)", "relu_direct": "a direct-launch "
                                                "program", "relu_good": "not an Ascend C kernel (cpu backend"}[name] in why


@pytest.mark.slow  # one more kernel build
def test_a_fault_in_the_projects_launch_names_its_rule_and_line(tmp_path, relu_task):
    project = export(make_run(tmp_path / "run", relu_task, CANDIDATES / "relu_overrun.cpp"), tmp_path / "out")
    run = run_project(project, cache=BUILDS)
    assert run.returncode == FAULT_EXIT, run.stdout + run.stderr
    assert run.fault.startswith("twin fault [gm-bounds]: DataCopyPad(UB->GM) at kernel.cpp:"), run.fault
