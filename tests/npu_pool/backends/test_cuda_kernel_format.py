"""The CUDA kernel-source format without a GPU: the signature rendered for CUDA, the translation
unit nvcc compiles, the nvcc command line and the build key as data, build outcomes (with a
stand-in nvcc), readiness and the compile route where nvcc is missing, the trusted wrapper's
extra stream argument and launch check (through a g++-built library), the bundle's family
examples' host entries and launches, and, where the real nvcc is installed, builds of the
prompt's worked example and a wrong signature, plus the launch check of a real nvcc library
(which, with no GPU, reports that the CUDA driver is missing). The family examples' nvcc
builds and GPU runs are tests/memory_actor/test_family_examples.py's."""

from __future__ import annotations

import ctypes
import re
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest
import torch

from actors.families import FAMILIES
from memory_actor.seeding import example_items, example_tasks
from npu_pool.backends import cuda as cuda_backend
from npu_pool.backends import cuda_kernel
from npu_pool.backends.base import KernelBuildError, ToolchainMissing
from npu_pool.backends.kernel_wrapper import KernelModule, load_entry
from npu_pool.paths import cache_root
from npu_pool.tasks.signature import derive_signature
from npu_pool.tasks.spec import load_task

from ..harness_support import SMALL_BYTES

ROOT = Path(__file__).resolve().parents[3]
RELU_SOURCE = r"""
__global__ void relu_kernel(const float* __restrict__ x, float* __restrict__ out, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

extern "C" void kernel(const float* x, float* out, int64_t x_d0, int64_t x_d1, int64_t out_d0, int64_t out_d1,
                       cudaStream_t stream) {
    const int64_t n = out_d0 * out_d1;
    relu_kernel<<<(unsigned)((n + 255) / 256), 256, 0, stream>>>(x, out, n);
}
"""


def _signature(reference, names, inputs, init_names=(), init_values=()):
    return derive_signature(reference, list(names), list(inputs), [reference(*inputs)], list(init_names), list(init_values))


@pytest.fixture(scope="module")
def relu_signature():
    return _signature(torch.nn.ReLU(), ["x"], [torch.randn(64, 96)])


def _real_nvcc() -> str | None:
    nvcc = cuda_backend.find_nvcc()
    if nvcc is None or cuda_kernel.nvcc_version(nvcc) == "unknown":
        return None
    return nvcc


needs_nvcc = pytest.mark.skipif(_real_nvcc() is None, reason="nvcc (the CUDA toolkit) is not installed")


# --- the signature the LLM sees and the unit nvcc compiles ------------------------------------


def test_rendered_signature_ends_with_the_stream_and_says_how_to_launch(relu_signature):
    text = cuda_kernel.render_cuda_signature(relu_signature)
    assert "device pointers" in text and "<<<grid, block, shared_bytes, stream>>>" in text
    params = [line.split("//")[0].strip() for line in text.splitlines() if line.startswith("    ")]
    assert params == ["const float* x,", "float* out,", "int64_t x_d0,", "int64_t x_d1,", "int64_t out_d0,",
                      "int64_t out_d1,", "cudaStream_t stream"]
    assert "OpenMP" not in text
    # the CPU rendering is untouched by the CUDA one
    assert relu_signature.render_c().splitlines()[-2].strip().startswith("int64_t out_d1")
    assert "cudaStream_t" not in relu_signature.render_c() + relu_signature.declaration()


def test_half_types_take_their_cuda_names():
    half = _signature(torch.nn.ReLU(), ["x"], [torch.randn(4, 8).half()])
    bf16 = _signature(torch.nn.ReLU(), ["x"], [torch.randn(4, 8).bfloat16()])
    assert "const __half* x" in cuda_kernel.render_cuda_signature(half) and "__half* out" in cuda_kernel.render_cuda_signature(half)
    assert "const __nv_bfloat16* x" in cuda_kernel.render_cuda_signature(bf16)
    assert "_Float16" in half.declaration()  # the task's own signature keeps the C names


def test_translation_unit_declares_the_entry_before_the_llm_source(relu_signature):
    unit = cuda_kernel.kernel_translation_unit("// the model's code", relu_signature)
    declaration = ('extern "C" void kernel(const float* x, float* out, int64_t x_d0, int64_t x_d1, '
                   'int64_t out_d0, int64_t out_d1, cudaStream_t stream);')
    assert unit.startswith(cuda_kernel.KERNEL_PRELUDE)
    assert unit.index(declaration) < unit.index("evokernel_launch_status") < unit.index('#line 1 "kernel.cu"\n// the model\'s code')
    assert "#include <cuda_runtime.h>" in unit and "#include <cuda_fp16.h>" in unit


# --- the nvcc command line and the build key -------------------------------------------------------


def test_nvcc_command_line_targets_exactly_the_device(tmp_path):
    command = cuda_kernel.nvcc_command("/opt/cuda/bin/nvcc", (9, 0), tmp_path / "k.cu", tmp_path / "k.so")
    assert command == ["/opt/cuda/bin/nvcc", "-O3", "-std=c++17", "-shared", "-Xcompiler", "-fPIC", "-cudart=static",
                       "-lineinfo", "-gencode", "arch=compute_90,code=sm_90", "-o", str(tmp_path / "k.so"),
                       str(tmp_path / "k.cu")]
    assert cuda_kernel.arch_flags((12, 0)) == ["-gencode", "arch=compute_120,code=sm_120"]


def _fake_nvcc(tmp_path: Path, body: str, version: str = "Build cuda_13.0.r13.0/compiler.36424714_0") -> str:
    """A stand-in nvcc: `--version` prints `version`; a build runs `body` (sh) with the
    output path in $OUT and counts its calls in calls.txt."""
    path = tmp_path / f"nvcc-{abs(hash((body, version)))}"
    path.write_text(textwrap.dedent(f"""\
        #!/bin/sh
        if [ "$1" = "--version" ]; then echo "nvcc: NVIDIA (R) Cuda compiler driver"; echo "{version}"; exit 0; fi
        echo call >> "{tmp_path}/calls.txt"
        while [ $# -gt 0 ]; do if [ "$1" = "-o" ]; then OUT="$2"; fi; shift; done
        {body}
        """))
    path.chmod(0o755)
    return str(path)


def test_build_key_carries_capability_nvcc_release_and_host_compiler(tmp_path):
    nvcc = _fake_nvcc(tmp_path, "true")
    other = _fake_nvcc(tmp_path, "true", version="Build cuda_12.8.r12.8/compiler.35404655_0")
    identity = cuda_kernel.kernel_build_identity(nvcc, (9, 0))
    assert identity["capability"] == "sm_90" and identity["nvcc"] == "Build cuda_13.0.r13.0/compiler.36424714_0"
    assert "arch=compute_90,code=sm_90" in identity["flags"] and identity["host_cxx"]
    unit = "__global__ void k() {}"
    key = cuda_kernel.kernel_build_key(unit, identity)
    assert key == cuda_kernel.kernel_build_key(unit, dict(reversed(identity.items())))  # order-free
    assert re.fullmatch(r"[0-9a-f]{24}", key)
    changed = [cuda_kernel.kernel_build_key(unit + " ", identity),
               cuda_kernel.kernel_build_key(unit, cuda_kernel.kernel_build_identity(nvcc, (10, 0))),
               cuda_kernel.kernel_build_key(unit, cuda_kernel.kernel_build_identity(other, (9, 0))),
               cuda_kernel.kernel_build_key(unit, identity | {"host_cxx": "g++ (GCC) 99.1"})]
    assert len({key, *changed}) == 5


def test_a_build_is_cached_by_content(tmp_path, relu_signature):
    nvcc = _fake_nvcc(tmp_path, 'echo built > "$OUT"')
    cache = tmp_path / "cache"
    first = cuda_kernel.build_kernel(RELU_SOURCE, relu_signature, nvcc, (9, 0), tmp_path, cache)
    again = cuda_kernel.build_kernel(RELU_SOURCE, relu_signature, nvcc, (9, 0), tmp_path, cache)
    other_gpu = cuda_kernel.build_kernel(RELU_SOURCE, relu_signature, nvcc, (8, 0), tmp_path, cache)
    assert first == again != other_gpu and first.read_text() == "built\n"
    assert (tmp_path / "calls.txt").read_text().count("call") == 2  # the second call hit the cache
    assert (tmp_path / "kernel_full.cu").read_text() == cuda_kernel.kernel_translation_unit(RELU_SOURCE, relu_signature)
    assert not list(cache.glob(".kernel-*"))  # no temporary left behind


def test_compile_errors_are_the_candidates_and_toolkit_limits_are_infra(tmp_path, relu_signature):
    broken = _fake_nvcc(tmp_path, 'echo "kernel.cu(3): error: identifier \\"y\\" is undefined" >&2; exit 2')
    with pytest.raises(KernelBuildError, match="nvcc exit 2") as caught:
        cuda_kernel.build_kernel(RELU_SOURCE, relu_signature, broken, (9, 0), tmp_path, tmp_path / "cache")
    assert not isinstance(caught.value, ToolchainMissing) and 'identifier "y" is undefined' in caught.value.log
    too_new = _fake_nvcc(tmp_path, "echo \"nvcc fatal   : Unsupported gpu architecture 'compute_120'\" >&2; exit 1")
    with pytest.raises(ToolchainMissing, match="cannot build for sm_120"):
        cuda_kernel.build_kernel(RELU_SOURCE, relu_signature, too_new, (12, 0), tmp_path, tmp_path / "cache")
    with pytest.raises(ToolchainMissing, match="could not be started"):
        cuda_kernel.build_kernel(RELU_SOURCE, relu_signature, str(tmp_path / "no-nvcc"), (9, 0), tmp_path, tmp_path / "cache")
    assert not list((tmp_path / "cache").glob("kernel-*.so"))


# --- readiness and the compile route -----------------------------------------------------------------


def test_without_nvcc_the_kernel_route_is_not_offered_and_readiness_names_it(monkeypatch):
    monkeypatch.setattr(cuda_backend, "find_nvcc", lambda: None)
    backend = cuda_backend.CudaBackend()
    assert backend.compile_routes == ("modelnew",)
    assert backend.toolchain_problem("kernel") == "nvcc not found: install the CUDA toolkit or set CUDA_HOME"
    monkeypatch.setattr(cuda_backend.CudaBackend, "is_available", lambda self: (True, ""))
    assert backend.ready("kernel") == (False, "nvcc not found: install the CUDA toolkit or set CUDA_HOME")
    with pytest.raises(ToolchainMissing, match="nvcc not found"):
        backend.compile_kernel(RELU_SOURCE, _signature(torch.nn.ReLU(), ["x"], [torch.randn(2, 2)]), Path("."), Path("."))


def test_with_nvcc_the_kernel_route_is_offered(monkeypatch, tmp_path):
    monkeypatch.setattr(cuda_backend, "find_nvcc", lambda: _fake_nvcc(tmp_path, "true"))
    backend = cuda_backend.CudaBackend()
    assert backend.compile_routes == ("modelnew", "kernel") and backend.toolchain_problem("kernel") is None


def test_nvcc_found_here_matches_the_kernel_route():
    backend = cuda_backend.CudaBackend()
    assert ("kernel" in backend.compile_routes) == (cuda_backend.find_nvcc() is not None)


# --- the trusted wrapper: the stream argument and the launch check ------------------------------


def test_wrapper_appends_extra_arguments_and_checks_after_each_call(tmp_path, relu_signature):
    """A g++ library with the CUDA ABI's trailing stream argument, called through KernelModule
    on the CPU: the stream value arrives last, the check runs after the call and can fail it."""
    compiler = shutil.which("g++")
    if compiler is None:
        pytest.skip("no g++")
    src = tmp_path / "k.cpp"
    src.write_text("#include <cstdint>\n" + relu_signature.declaration(extra=[("void*", "stream", "")]).replace(");", ") {")
                   + "\n  for (int64_t i = 0; i < out_d0 * out_d1; ++i) out[i] = x[i] + (float)(intptr_t)stream;\n}\n")
    lib = tmp_path / "k.so"
    subprocess.run([compiler, "-shared", "-fPIC", "-o", str(lib), str(src)], check=True)
    entry = load_entry(lib, relu_signature, extra_argtypes=[ctypes.c_void_p])
    checks: list[str] = []
    module = KernelModule(entry, relu_signature, torch.nn.ReLU(), "cpu", extra_args=lambda: (7,),
                          after_call=lambda: checks.append("checked"))
    x = torch.randn(64, 96)
    torch.testing.assert_close(module(x), x + 7)
    assert checks == ["checked"]

    def failing() -> None:
        raise RuntimeError("CUDA error 9 (invalid configuration argument)")
    module = KernelModule(entry, relu_signature, torch.nn.ReLU(), "cpu", extra_args=lambda: (0,), after_call=failing)
    with pytest.raises(RuntimeError, match="invalid configuration"):
        module(x)


def test_wrapper_refuses_a_tensor_on_another_device(relu_signature):
    module = KernelModule(lambda *args: None, relu_signature, torch.nn.ReLU(), "meta")
    with pytest.raises(RuntimeError, match="x is on cpu, the kernel runs on meta"):
        module(torch.randn(64, 96))


# --- the bundle's family examples and the prompt's worked example -----------------------------


def _entry_params(code: str) -> list[str]:
    match = re.search(r'extern\s+"C"\s+void\s+kernel\s*\(([^)]*)\)\s*\{', code)
    assert match, "no host entry point"
    return [" ".join(p.split()) for p in match.group(1).split(",")]


def _declared_params(signature) -> list[str]:
    text = cuda_kernel.cuda_signature(signature).declaration(extra=[cuda_kernel.STREAM_PARAM])
    return [" ".join(p.split()) for p in text[text.index("(") + 1:text.rindex(")")].split(",")]


CUDA_EXAMPLES = example_items("cuda")  # family -> the bundle's worked example (bundles/cuda.yaml)


def test_the_cuda_bundle_has_family_examples_to_check():
    """The parametrisation below is over these: an empty one would pass with nothing checked."""
    assert sorted(CUDA_EXAMPLES) == sorted(FAMILIES) and FAMILIES


@pytest.mark.parametrize("family", sorted(CUDA_EXAMPLES))
def test_family_examples_declare_their_tasks_cuda_entry_and_launch_on_the_stream(family, tmp_path):
    """What tests/memory_actor/test_family_examples.py does not read in the code: the host entry's
    parameters are those of the task's CUDA signature (stream last) and every launch uses it."""
    item = CUDA_EXAMPLES[family]
    task_file = tmp_path / f"{item.task_id}.py"
    task_file.write_text(example_tasks()[item.task_id][1])
    task = load_task(task_file, max_bytes=SMALL_BYTES)
    assert task.kernel_signature is not None
    assert _entry_params(item.content) == _declared_params(task.kernel_signature)
    launches = re.findall(r"<<<(.*?)>>>", item.content, re.DOTALL)
    assert launches and all(launch.replace(" ", "").endswith(",stream") for launch in launches), launches


EXAMPLE = ROOT / "actors" / "prompts" / "example_kernel_cuda.md"


def _scaled_add_signature():
    class Model(torch.nn.Module):
        def __init__(self, alpha: float):
            super().__init__()
            self.alpha = alpha

        def forward(self, x, y):
            return x * self.alpha + y

    return _signature(Model(0.5), ["x", "y"], [torch.randn(64, 1024), torch.randn(64, 1024)], ["alpha"], [0.5])


def _example_answer() -> str:
    return re.search(r"=== assistant ===\s*```cpp\n(.*?)\n```", EXAMPLE.read_text(), re.DOTALL).group(1)


def test_worked_example_shows_the_rendered_signature_and_answers_it():
    signature = _scaled_add_signature()
    assert cuda_kernel.render_cuda_signature(signature) in EXAMPLE.read_text()
    assert _entry_params(_example_answer()) == _declared_params(signature)
    from npu_pool.antihack import check_kernel_source

    assert [f for f in check_kernel_source(_example_answer(), "cuda") if f.severity == "reject"] == []


# --- with the real nvcc (no GPU needed to build) ------------------------------------------------------


def _build_real(source: str, signature, tmp_path: Path, capability=(9, 0)) -> Path:
    return cuda_kernel.build_kernel(source, signature, _real_nvcc(), capability, tmp_path,
                                    cache_root() / "test-build" / "cuda-kernels")


@needs_nvcc
def test_real_nvcc_builds_the_worked_example_and_a_wrong_signature_is_the_candidates_error(tmp_path):
    artifact = _build_real(_example_answer(), _scaled_add_signature(), tmp_path)
    assert artifact.stat().st_size > 0
    no_stream = _example_answer().replace(", cudaStream_t stream)", ")").replace(", 0, stream>>>", ">>>")
    with pytest.raises(KernelBuildError) as caught:
        _build_real(no_stream, _scaled_add_signature(), tmp_path)
    assert not isinstance(caught.value, ToolchainMissing) and "kernel.cu" in caught.value.log


@needs_nvcc
def test_real_library_loads_and_its_launch_check_reports_cuda_errors(tmp_path, relu_signature):
    artifact = _build_real(RELU_SOURCE, relu_signature, tmp_path)
    entry, check = cuda_kernel.load_cuda_entry(artifact, relu_signature)
    assert [t.__name__ for t in entry.argtypes][-1] == "c_void_p" and len(entry.argtypes) == len(relu_signature.args) + 1
    if torch.cuda.is_available():
        pytest.skip("a GPU is present: the launch below would run (the GPU tests cover it)")
    check.clear()
    entry(None, None, 64, 96, 64, 96, None)  # no driver: the launch fails and records why
    with pytest.raises(RuntimeError, match=r"CUDA error \d+ \(.+\) from the launches in kernel"):
        check()
