"""Drop-in ModelNew files for the cuda kernel format, and what the Ascend C formats get instead.

This machine has nvcc but no GPU and a CPU build of torch, so a CUDA drop-in cannot be built
and run here (docs/reports.md says where it was run on a GPU). What can fail here is tested:
the file is written by a run's kernels folder, passes the anti-hack gate, imports only torch,
executes with nothing of EvoKernel on its path (load_inline replaced by a recorder of what it
was asked to build, the one thing a GPU-less CPU torch cannot do), and the CUDA translation
unit it hands load_inline compiles with nvcc against torch's headers (slow; skipped without
nvcc or torch's CUDA headers).
"""

from __future__ import annotations

import ast
import inspect
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest

from actors.messages import Attempt
from launch.kernel_files import KernelFolder, kernel_task
from launch.kernel_index import KernelIndex
from npu_pool.antihack import check_python_candidate
from npu_pool.tasks.spec import load_task

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "suites" / "cpu"

RELU_CUDA = """#include <cstdint>

__global__ void relu(const float* x, float* out, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i] > 0.f ? x[i] : 0.f;
}

extern "C" void kernel(const float* x, float* out, int64_t x_d0, int64_t x_d1, int64_t out_d0,
                       int64_t out_d1, cudaStream_t stream) {
    const int64_t n = x_d0 * x_d1;
    relu<<<(unsigned)((n + 255) / 256), 256, 0, stream>>>(x, out, n);
}
"""

GEMM_CUDA = """#include <cstdint>

__global__ void gemm_scale_clip(const float* x, const float* w, const float* b, float* out, int64_t rows,
                                int64_t cols, int64_t inner, float scale, float lo, float hi) {
    int64_t j = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    int64_t i = blockIdx.y;
    if (j >= cols) return;
    float acc = b[j];
    for (int64_t k = 0; k < inner; ++k) acc += x[i * inner + k] * w[j * inner + k];
    out[i * cols + j] = fminf(fmaxf(acc * scale, lo), hi);
}

extern "C" void kernel(const float* x, const float* linear_weight, const float* linear_bias, float* out,
                       int64_t in_features, int64_t out_features, double scaling_factor, double min_val,
                       double max_val, int64_t x_d0, int64_t x_d1, int64_t linear_weight_d0,
                       int64_t linear_weight_d1, int64_t linear_bias_d0, int64_t out_d0, int64_t out_d1,
                       cudaStream_t stream) {
    dim3 grid((unsigned)((linear_weight_d0 + 127) / 128), (unsigned)x_d0);
    gemm_scale_clip<<<grid, 128, 0, stream>>>(x, linear_weight, linear_bias, out, x_d0, linear_weight_d0, x_d1,
                                              (float)scaling_factor, (float)min_val, (float)max_val);
}
"""

CUDA_KERNELS = {"level1/4_ReLU.py": RELU_CUDA, "level2/10_GemmScaleHardtanh.py": GEMM_CUDA}

# Runs a drop-in with nothing of EvoKernel importable (python -I, the repository not on the
# path) and load_inline replaced by a recorder: prints what it was asked to build as JSON.
RECORD_BUILD = textwrap.dedent("""
    import importlib.util, json, sys
    import torch.utils.cpp_extension as cpp_extension
    asked = {}
    def load_inline(**kwargs):
        asked.update(kwargs)
        return object()
    cpp_extension.load_inline = load_inline
    spec = importlib.util.spec_from_file_location("dropin", sys.argv[1])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    evokernel = sorted(m for m in sys.modules if m.split(".")[0] in ("launch", "npu_pool", "actors", "memory_actor"))
    print(json.dumps({"asked": asked, "evokernel_modules": evokernel, "has_modelnew": hasattr(module, "ModelNew")}))
""")


def _write_kernels(run_dir: Path, backend: str, kernels: dict[str, str]) -> KernelIndex:
    folder = KernelFolder(run_dir)
    for number, (relative, code) in enumerate(kernels.items()):
        task = kernel_task(load_task(SUITE / relative, max_bytes=4 * 2**20), backend, "kernel")
        folder.operator_started(task)
        folder.record(Attempt(run_id="r", task=task.task, iteration=1, stage="draft", gate="ok", feasible=True,
                              latency_ms=1.0, speedup_vs_eager=1.5, code=code, attempt_id=f"a{number}"))
    return KernelIndex.load(run_dir / "kernels")


@pytest.fixture(scope="module")
def cuda_kernels(tmp_path_factory) -> Path:
    run_dir = tmp_path_factory.mktemp("cuda-kernels")
    _write_kernels(run_dir, "cuda", CUDA_KERNELS)
    return run_dir


def _recorded_build(dropin: Path, cwd: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    done = subprocess.run([sys.executable, "-I", "-c", RECORD_BUILD, str(dropin)], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_cuda_kernels_get_a_drop_in_that_imports_only_torch_and_passes_the_hack_gate(cuda_kernels):
    index = KernelIndex.load(cuda_kernels / "kernels")
    assert sorted((e.task, e.kernel) for e in index.kernels) == [
        ("10_GemmScaleHardtanh", "best"), ("10_GemmScaleHardtanh", "first"), ("4_ReLU", "best"), ("4_ReLU", "first")]
    for entry in index.kernels:
        assert entry.backend == "cuda" and entry.source.endswith(".cu"), entry
        assert entry.modelnew and entry.modelnew.endswith("_modelnew.py") and entry.modelnew_note is None, entry
        text = (cuda_kernels / "kernels" / entry.modelnew).read_text()
        tree = ast.parse(text)
        imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
        imported |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
        assert {name.split(".")[0] for name in imported} <= {"torch", "os"}, imported  # os: the stale-lock check
        rejected = [f for f in check_python_candidate(text) if f.severity == "reject"]
        assert not rejected, rejected
        assert (cuda_kernels / "kernels" / entry.source).read_text() in text  # the source exactly as verified


def test_a_cuda_drop_in_runs_without_evokernel_and_asks_for_a_cuda_build(cuda_kernels, tmp_path):
    for entry in KernelIndex.load(cuda_kernels / "kernels").kernels:
        if entry.kernel != "best":
            continue
        found = _recorded_build(cuda_kernels / "kernels" / entry.modelnew, tmp_path)
        assert found["evokernel_modules"] == [] and found["has_modelnew"], found
        asked = found["asked"]
        assert asked["functions"] == ["evokernel_launch"] and asked["cpp_sources"][0].startswith("void evokernel_launch(")
        (unit,) = asked["cuda_sources"]
        code = (cuda_kernels / "kernels" / entry.source).read_text()
        # the kernel after the prelude, on its own line numbers, then the launcher that calls it
        assert '#line 1 "kernel.cu"\n' + code in unit and "cudaStream_t stream);" in unit
        launcher = unit.split(code, 1)[1]
        assert "c10::cuda::getCurrentCUDAStream()" in launcher and "C10_CUDA_KERNEL_LAUNCH_CHECK();" in launcher
        assert 'TORCH_CHECK(x.is_cuda(), "x must be a CUDA tensor");' in launcher
    gemm = (cuda_kernels / "kernels" / "10_GemmScaleHardtanh" / "best_modelnew.py").read_text()  # also the first
    # parameters from the module, scalars from the constructor, dimensions from the tensors
    assert "self.linear.weight.detach().contiguous()" in gemm and "float(self.evokernel_init['min_val'])" in gemm
    assert "static_cast<const float*>(linear_weight.data_ptr())" in gemm


def _torch_cuda_headers() -> tuple[list[str], list[str]]:
    """Include folders for load_inline's build, and the headers it needs that are missing here
    (a CPU build of torch lacks c10's generated CUDA header)."""
    import torch.utils.cpp_extension as cpp_extension

    includes = [*cpp_extension.include_paths(), sysconfig.get_paths()["include"]]
    needed = ["c10/cuda/CUDAStream.h", "c10/cuda/impl/cuda_cmake_macros.h", "torch/extension.h", "Python.h"]
    return includes, [h for h in needed if not any(Path(d, h).is_file() for d in includes)]


def _nvcc(nvcc: str, flags: list[str], source: Path) -> None:
    done = subprocess.run([nvcc, "-c", *flags, "-arch=sm_90", "-o", str(source.with_suffix(".o")), str(source)],
                          capture_output=True, text=True, timeout=1100)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_the_cuda_translation_unit_compiles_with_nvcc(cuda_kernels, tmp_path):
    """The kernel with its prelude and declaration, under load_inline's nvcc flags (torch's
    -D__CUDA_NO_HALF_* and the drop-in's -U of them), compiles wherever nvcc is; the whole unit
    (torch's headers and the launcher) only where torch is a CUDA build (else skipped: it was
    built and run on a GPU, docs/reports.md)."""
    import torch.utils.cpp_extension as cpp_extension

    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("no nvcc on this machine")
    includes, missing = _torch_cuda_headers()
    # the C++ standard this torch's load_inline gives nvcc (torch 2.13: c++20; older: c++17)
    std = "-std=c++20" if "-std=c++20" in inspect.getsource(cpp_extension) else "-std=c++17"
    for entry in KernelIndex.load(cuda_kernels / "kernels").kernels:
        if entry.kernel != "best":
            continue
        asked = _recorded_build(cuda_kernels / "kernels" / entry.modelnew, tmp_path)["asked"]
        (unit,) = asked["cuda_sources"]
        flags = [*cpp_extension.COMMON_NVCC_FLAGS, "--compiler-options", "-fPIC", *asked["extra_cuda_cflags"], std]
        code = (cuda_kernels / "kernels" / entry.source).read_text()
        kernel_part = unit[:unit.index(code) + len(code)]
        kernel_part = "".join(line for line in kernel_part.splitlines(keepends=True)
                              if not line.startswith(("#include <torch/", "#include <c10/")))
        (tmp_path / f"{entry.task}_kernel.cu").write_text(kernel_part)
        _nvcc(nvcc, flags, tmp_path / f"{entry.task}_kernel.cu")
        if missing:
            continue
        # what load_inline itself puts before the CUDA sources, and its defines
        (tmp_path / f"{entry.task}.cu").write_text(
            "#include <torch/types.h>\n#include <cuda.h>\n#include <cuda_runtime.h>\n\n" + unit)
        _nvcc(nvcc, [*(f"-I{d}" for d in includes), "-DTORCH_EXTENSION_NAME=check",
                     "-DTORCH_API_INCLUDE_EXTENSION_H", *flags], tmp_path / f"{entry.task}.cu")
    if missing:
        pytest.skip(f"the kernels compiled; the whole unit needs a CUDA build of torch (missing: {', '.join(missing)})")


def test_ascend_c_kernels_keep_their_source_and_say_how_to_build_it(tmp_path):
    code = '#include "kernel_operator.h"\nextern "C" __global__ __aicore__ void kernel(GM_ADDR x) {}\n'
    for backend in ("npu", "npu-twin"):
        index = _write_kernels(tmp_path / backend, backend, {"level1/4_ReLU.py": code})
        for entry in index.kernels:
            assert entry.modelnew is None and entry.source == "4_ReLU/best.cpp"  # the first, kept once as the best
            assert "ascendc_library" in entry.modelnew_note and "evokernel verify --backend npu" in entry.modelnew_note
            assert (tmp_path / backend / "kernels" / entry.source).read_text() == code
