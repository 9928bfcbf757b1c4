"""The npu-twin backend: the npu backend's Ascend C kernel format built with g++ against the CPU
twin and launched through CANN's host ABI, timing modelled (every gate in the sandbox:
test_sandbox_gates.py).

Real builds throughout: the kernels of candidates/npu_twin/ are compiled once per session by the
`built` fixture (conftest.py; and across sessions, by the persistent test build cache the
sandboxed worker also reads), side by side."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import torch

from npu_pool.backends import DETECTION_ORDER, timing_kind
from npu_pool.backends.ascendc import (
    kernel_translation_unit,
    load_launcher,
    render_ascendc_signature,
)
from npu_pool.backends.ascendc_twin.backend import (
    NpuTwinBackend,
    launcher_translation_unit,
    summarize_build_errors,
)
from npu_pool.backends.ascendc_twin.build import first_error
from npu_pool.backends.base import KernelBuildError
from npu_pool.paths import build_cache_dir
from tests.npu_pool.backends.ascendc_twin.twin_support import CANDIDATE_KERNELS as KERNELS
from tests.npu_pool.backends.ascendc_twin.twin_support import kernel_cache, line_of
from tests.npu_pool.harness_support import ROOT, harness_config

EXAMPLE = ROOT / "actors" / "prompts" / "example_kernel_ascendc.md"


def test_npu_twin_is_registered_by_name_never_detected(backend):
    assert isinstance(backend, NpuTwinBackend) and backend.name == "npu-twin"
    assert "npu-twin" not in DETECTION_ORDER
    assert backend.compile_routes == ("kernel",) and backend.kernel_language == "ascendc"
    assert backend.timing_kind == "modelled" and timing_kind("npu-twin") == "modelled"
    assert timing_kind("cpu") == "measured" and timing_kind("auto") == "measured"
    assert backend.ready("kernel") == (True, "")


def test_ray_slots_of_a_twin_run_are_cpu_slots_evaluating_with_the_twin():
    from npu_pool.devices import device_kind, evaluating_backend

    assert device_kind("npu-twin", []) == "cpu"
    assert evaluating_backend("cpu", "npu-twin", fake=False) == "npu-twin"
    assert evaluating_backend("cpu", "auto", fake=False) == "cpu"
    assert evaluating_backend("npu", "npu-twin", fake=True) == "npu-twin"
    assert evaluating_backend("cuda", "cuda", fake=False) == "cuda"


def test_the_kernel_format_is_the_npu_backends(relu_task, backend):
    """Same prompt signature, same kernel TU; the launcher exports CANN's aclrtlaunch ABI."""
    signature = relu_task.kernel_signature
    assert backend.render_kernel_signature(signature) == render_ascendc_signature(signature)
    launcher = launcher_translation_unit(signature)
    assert 'extern "C" uint32_t aclrtlaunch_kernel(uint32_t blockDim, void* stream, void* x, void* out, ' \
           "void* workspace, void* tiling)" in launcher
    assert "evk_twin::Launch(blockDim" in launcher
    assert '#include "kernel_operator.h"' in kernel_translation_unit("", signature)


def test_a_correct_kernel_runs_and_its_timing_is_the_modelled_cost(relu_task, backend, built):
    artifact = built["relu_good"]
    assert isinstance(artifact, Path), artifact
    load_launcher(artifact, relu_task.kernel_signature)  # the npu backend's own loader finds the ABI
    torch.manual_seed(0)
    reference = torch.nn.ReLU()
    module = backend.wrap_kernel(artifact, relu_task.kernel_signature, reference)
    x = torch.randn(relu_task.inputs[0].shape)
    launches = backend.launches
    timer = backend.timer()
    timer.start()
    out = module(x)
    timer.stop()
    torch.testing.assert_close(out, torch.relu(x), rtol=0, atol=0)
    profile = backend.last_profile
    assert profile["modelled"] is True and profile["blocks"] == backend.soc_params()["ai_cores"]
    assert timer.elapsed_ms() == pytest.approx(profile["modelled_us"] / 1e3) and timer.elapsed_ms() > 0
    assert profile["bytes"]["GM->UB"] == profile["bytes"]["UB->GM"] == x.numel() * 4
    assert "unseen_gm_bytes" not in profile and backend.launches == launches + 1
    eager = backend.timer()  # no twin launch inside: eager PyTorch modelled on the same SoC
    eager.start()
    reference(x)
    eager.stop()
    soc = backend.soc_params()
    expected_us = soc["launch_us"] + 2 * x.numel() * 4 / (soc["gm_gbps"] * 1e3)  # one op: read x, write out
    assert eager.elapsed_ms() == pytest.approx(expected_us / 1e3) and backend.launches == launches + 1


def test_raw_global_memory_access_is_charged_not_free(relu_task, backend, built):
    x = torch.randn(relu_task.inputs[0].shape)
    costs = {}
    for name in ("relu_good", "relu_raw"):
        module = backend.wrap_kernel(built[name], relu_task.kernel_signature, torch.nn.ReLU())
        torch.testing.assert_close(module(x), torch.relu(x), rtol=0, atol=0)
        costs[name] = backend.last_profile
    raw = costs["relu_raw"]
    # each raw load and store is seen (twin_raw_gm.h) and costed as a scalar global-memory access
    assert raw["gm_scalar_accesses"] == costs["relu_good"]["gm_scalar_accesses"] + 2 * x.numel()
    assert "unseen_gm_bytes" not in raw
    assert raw["modelled_us"] > 10 * costs["relu_good"]["modelled_us"]


def test_scalar_math_the_kernel_calls_is_charged_to_the_scalar_unit(relu_task, backend, built):
    """A formula run on the scalar unit over a tile in UB (the climb's middle form): cheaper than
    scalar round trips to global memory, dearer than vector instructions, and every expf/sqrtf
    the kernel calls element by element is counted and charged (twin_scalar_math.h)."""
    x = torch.randn(relu_task.inputs[0].shape)
    profiles = {}
    for name in ("relu_good", "relu_raw", "relu_ub_scalar", "relu_ub_scalar_math"):
        assert isinstance(built[name], Path), built[name]
        module = backend.wrap_kernel(built[name], relu_task.kernel_signature, torch.nn.ReLU())
        torch.testing.assert_close(module(x), torch.relu(x), rtol=0, atol=0)
        profiles[name] = backend.last_profile
    plain, math = profiles["relu_ub_scalar"], profiles["relu_ub_scalar_math"]
    n = x.numel()
    assert plain["scalar_ops"] == math["scalar_ops"] == 2 * n  # a GetValue and a SetValue per element
    assert plain["scalar_math_calls"] == {"transcendental": 0, "root": 0}
    assert profiles["relu_good"]["scalar_math_calls"] == {"transcendental": 0, "root": 0}
    assert math["scalar_math_calls"] == {"transcendental": n, "root": n}  # std::exp and sqrtf, once per element
    cycles = math["soc"]["scalar_math_cycles"]
    extra_us = n * (cycles["transcendental"] + cycles["root"]) / (math["soc"]["clock_ghz"] * 1e3)
    assert math["time_us"]["scalar"] - plain["time_us"]["scalar"] == pytest.approx(extra_us, rel=1e-3)
    assert math["modelled_us"] > plain["modelled_us"]
    # the order the performance guide gives: vector tiles < scalar over UB < scalar over global memory
    assert profiles["relu_good"]["modelled_us"] < plain["modelled_us"] < profiles["relu_raw"]["modelled_us"] / 10


def test_v3s_relu6_writing_the_whole_output_on_every_block_is_refused(relu_task, backend, built):
    """v3's feasible 45_ReLU6 (candidates/npu_twin/relu6_v3_every_block.cpp, as published): every
    block loops over the whole tensor through raw pointers. Its task's signature is 4_ReLU's."""
    module = backend.wrap_kernel(built["relu6_v3_every_block"], relu_task.kernel_signature, torch.nn.ReLU6())
    with pytest.raises(RuntimeError) as caught:
        module(torch.randn(relu_task.inputs[0].shape))
    line = line_of(KERNELS / "relu6_v3_every_block.cpp", "out_ptr[off] =")
    assert re.match(rf"twin fault \[block-overlap\]: raw store at kernel\.cpp:{line}: block 1 writes byte 0 of 'out' that "
                    r"block 0 also wrote", str(caught.value)), caught.value


RAW_PAST_THE_END = """#include <cstring>
using namespace AscendC;
// past the end of the output, two ways: a raw store (seen as it happens) or a libc memcpy (not
// instrumented: found in the guard band after the launch); the input's first element chooses
extern "C" __global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR out, GM_ADDR workspace, GM_ADDR tiling)
{
    KernelTiling t;
    CopyTiling(&t, tiling);
    const int64_t total = t.x_d0 * t.x_d1;
    __gm__ float* dst = (__gm__ float*)out;
    if (GetBlockIdx() != 0) return;
    if (((__gm__ float*)x)[0] > 0.0f) std::memcpy(dst + total, x, 4 + (total & 3) * 4);
    else dst[total] = 1.0f;
}
"""


def test_an_output_has_a_guard_band_past_its_end(relu_task, backend, tmp_path):
    artifact = backend.compile_kernel(RAW_PAST_THE_END, relu_task.kernel_signature, tmp_path, kernel_cache())
    module = backend.wrap_kernel(artifact, relu_task.kernel_signature, torch.nn.ReLU())
    x = torch.randn(relu_task.inputs[0].shape)
    nbytes = x.numel() * 4
    x[0, 0] = -1.0
    with pytest.raises(RuntimeError, match=rf"twin fault \[gm-bounds\]: raw store at kernel\.cpp:13: writes 4 bytes at "
                                           rf"byte {nbytes} of 'out' \({nbytes} bytes\), past its end"):
        module(x)
    x[0, 0] = 1.0
    with pytest.raises(RuntimeError, match=re.escape(f"the kernel wrote past the end of its tensor out ({list(x.shape)}), "
                                                     "into the guard band")):
        module(x)


def test_a_host_half_sets_the_tiling_the_blocks_and_runs_before_each_launch(relu_task, backend, built):
    """The two-half form: TilingFunc runs on the host before the launch; its struct is the
    kernel's tiling argument and its blockDim the launch's block count (not every AI core)."""
    artifact = built["relu_host"]
    assert isinstance(artifact, Path), artifact
    module = backend.wrap_kernel(artifact, relu_task.kernel_signature, torch.nn.ReLU())
    x = torch.randn(relu_task.inputs[0].shape)
    torch.testing.assert_close(module(x), torch.relu(x), rtol=0, atol=0)
    assert backend.last_profile["blocks"] == 8 and backend.soc_params()["ai_cores"] == 24
    assert backend.last_profile["bytes"]["GM->UB"] == x.numel() * 4
    # the op project's form: TILING_DATA macros, TilingFunc(gert::TilingContext*), GET_TILING_DATA
    artifact = built["relu_op"]
    assert isinstance(artifact, Path), artifact
    module = backend.wrap_kernel(artifact, relu_task.kernel_signature, torch.nn.ReLU())
    torch.testing.assert_close(module(x), torch.relu(x), rtol=0, atol=0)
    assert backend.last_profile["blocks"] == 8


def test_a_direct_launch_program_runs_its_own_tiling_and_launch(relu_task, backend, built, tmp_path):
    """The direct-launch form: a torch extension's operator tiles on the host and launches a
    kernel template with scalar arguments through <<<>>>; its block count is its own (a block per
    2048 elements, up to GetCoreNumAiv(): the 48 vector cores of Ascend910B1)."""
    artifact = built["relu_direct"]
    assert isinstance(artifact, Path), artifact
    module = backend.wrap_kernel(artifact, relu_task.kernel_signature, torch.nn.ReLU())
    x = torch.randn(relu_task.inputs[0].shape)
    torch.testing.assert_close(module(x), torch.relu(x), rtol=0, atol=0)
    assert backend.last_profile["blocks"] == min(48, -(-x.numel() // 2048))
    assert backend.last_profile["vector_cores"] == 48 and backend.last_profile["ai_cores"] == 24
    # a fault inside the program's launch stops it with the rule and the kernel's line
    wide = (KERNELS / "relu_direct.cpp").read_text().replace("ub / 4 / 32 * 32", "ub / 2 / 32 * 32")
    faulty = backend.wrap_kernel(backend.compile_kernel(wide, relu_task.kernel_signature, tmp_path, kernel_cache()),
                                 relu_task.kernel_signature, torch.nn.ReLU())
    with pytest.raises(RuntimeError, match=r"twin fault \[ub-capacity\]: TPipe::InitBuffer at kernel\.cpp:"
                                           rf"{line_of(KERNELS / 'relu_direct.cpp', 'InitBuffer(qOut')}:"):
        faulty(x)


@pytest.mark.slow  # four more -O2 builds
def test_a_direct_program_that_launches_nothing_fails_and_aclrt_launch_kernel_runs(relu_task, backend, built, tmp_path):
    x = torch.randn(relu_task.inputs[0].shape)
    # an operator that launches nothing computed on the host, which a device's host code cannot
    idle = (KERNELS / "relu_direct.cpp").read_text().replace("kernel<float><<<blocks, nullptr, stream>>>(", "(void)(")
    (tmp_path / "idle").mkdir()
    idle_module = backend.wrap_kernel(backend.compile_kernel(idle, relu_task.kernel_signature, tmp_path / "idle", kernel_cache()),
                                      relu_task.kernel_signature, torch.nn.ReLU())
    with pytest.raises(RuntimeError, match=r"the host program threw: operator 'relu' launched no kernel"):
        idle_module(x)
    # a kernel launch project's ACLRT_LAUNCH_KERNEL, whose launcher takes void* for GM_ADDR
    aclrt = (KERNELS / "relu_direct.cpp").read_text().replace("template <typename T>\n", "using T = float;\n").replace(
        "kernel<float><<<blocks, nullptr, stream>>>(\n        (GM_ADDR)x.data_ptr(), (GM_ADDR)y.data_ptr(),",
        '#include "aclrtlaunch_kernel.h"\n    ACLRT_LAUNCH_KERNEL(kernel)(blocks, stream, x.data_ptr(), y.data_ptr(),')
    assert "ACLRT_LAUNCH_KERNEL(kernel)" in aclrt
    (tmp_path / "aclrt").mkdir()
    aclrt_module = backend.wrap_kernel(backend.compile_kernel(aclrt, relu_task.kernel_signature, tmp_path / "aclrt", kernel_cache()),
                                       relu_task.kernel_signature, torch.nn.ReLU())
    torch.testing.assert_close(aclrt_module(x), torch.relu(x), rtol=0, atol=0)
    # an operator registered as a lambda (pybind11 takes one; published extensions do)
    wrapped = (KERNELS / "relu_direct.cpp").read_text().replace(
        'm.def("relu", &relu_direct,', 'm.def("relu", [](const torch::Tensor& t) { return relu_direct(t); },')
    assert "[](const torch::Tensor& t)" in wrapped
    (tmp_path / "lambda").mkdir()
    lambda_module = backend.wrap_kernel(backend.compile_kernel(wrapped, relu_task.kernel_signature, tmp_path / "lambda",
                                                               kernel_cache()), relu_task.kernel_signature, torch.nn.ReLU())
    torch.testing.assert_close(lambda_module(x), torch.relu(x), rtol=0, atol=0)
    # a program that launches twice (here ReLU again, in place) is costed as both launches, one
    # after the other on its stream, not as its last
    backend.wrap_kernel(built["relu_direct"], relu_task.kernel_signature, torch.nn.ReLU())(x)
    once = backend.last_profile
    twice = (KERNELS / "relu_direct.cpp").read_text().replace("    return y;\n}", (
        "    kernel<float><<<blocks, nullptr, stream>>>(\n"
        "        (GM_ADDR)y.data_ptr(), (GM_ADDR)y.data_ptr(), x.numel(), perBlock, tileBytes);\n    return y;\n}"))
    (tmp_path / "twice").mkdir()
    twice_module = backend.wrap_kernel(backend.compile_kernel(twice, relu_task.kernel_signature, tmp_path / "twice",
                                                              kernel_cache()), relu_task.kernel_signature, torch.nn.ReLU())
    torch.testing.assert_close(twice_module(x), torch.relu(x), rtol=0, atol=0)
    profile = backend.last_profile
    assert "launches" not in once and profile["launches"] == 2
    assert profile["last_launch_us"] == pytest.approx(once["modelled_us"], abs=1e-4)  # printed to 4 places
    assert profile["modelled_us"] == pytest.approx(2 * once["modelled_us"], abs=2e-4)
    assert profile["bytes"]["GM->UB"] == 2 * once["bytes"]["GM->UB"] and profile["blocks"] == once["blocks"]


def test_a_launch_outside_the_direct_form_names_the_form(relu_task, backend, tmp_path):
    source = (KERNELS / "relu_good.cpp").read_text() + "\nvoid go(GM_ADDR x, GM_ADDR y) { kernel<<<8, nullptr, nullptr>>>(x, y, x, x); }\n"
    with pytest.raises(KernelBuildError, match=r"kernel\.cpp:\d+: a kernel launch \(<<<\.\.\.>>>, ACLRT_LAUNCH_KERNEL\) is host code.*direct-launch form"):
        backend.compile_kernel(source, relu_task.kernel_signature, tmp_path, tmp_path)


def test_a_hardware_rule_broken_raises_the_twin_fault_with_rule_and_line(relu_task, backend, built):
    module = backend.wrap_kernel(built["relu_overrun"], relu_task.kernel_signature, torch.nn.ReLU())
    with pytest.raises(RuntimeError) as caught:
        module(torch.randn(relu_task.inputs[0].shape))
    line = line_of(KERNELS / "relu_overrun.cpp", "DataCopyPad(outGm[off]")
    assert re.match(rf"twin fault \[gm-bounds\]: DataCopyPad\(UB->GM\) at kernel\.cpp:{line}: writes ", str(caught.value)), caught.value
    # the next launch starts clean: no region or fault of the failed one is left behind
    good = backend.wrap_kernel(built["relu_good"], relu_task.kernel_signature, torch.nn.ReLU())
    x = torch.randn(relu_task.inputs[0].shape)
    torch.testing.assert_close(good(x), torch.relu(x), rtol=0, atol=0)


def test_an_api_outside_the_twin_is_named_in_one_line(built):
    error = built["relu_unsupported"]
    assert isinstance(error, KernelBuildError)
    line = line_of(KERNELS / "relu_unsupported.cpp", "Tanh(")
    assert str(error).startswith(f"AscendC::Tanh is not in the EvoKernel twin (kernel.cpp:{line})"), str(error)
    assert "docs/ascendc_twin.md" in str(error)
    undeclared = built["relu_undeclared"]
    assert isinstance(undeclared, KernelBuildError)
    assert str(undeclared).startswith("'Frobnicate' is not declared: not in the Ascend C twin's API subset"), str(undeclared)
    call_line = line_of(KERNELS / "relu_good.cpp", "Relu(yLocal")
    assert f"kernel.cpp:{call_line}" in str(undeclared)
    # the compiler's quoted source line is the kernel's own line (not the unit's, which the
    # prelude's tiling struct would shift)
    assert re.search(rf"^\s*{call_line} \|\s*Frobnicate\(yLocal", undeclared.log, re.MULTILINE), undeclared.log


def test_an_entry_with_another_parameter_list_is_a_compile_error(built):
    error = built["relu_other_signature"]
    assert isinstance(error, KernelBuildError)
    assert str(error).startswith("the kernel's entry 'kernel' does not have the signature given"), str(error)


def test_the_ascend_c_worked_example_passes_on_the_twin(backend, tmp_path):
    """The prompt's worked example (actors/prompts/example_kernel_ascendc.md) is a real kernel."""
    from npu_pool.tasks.signature import derive_signature

    class ScaledAdd(torch.nn.Module):
        def __init__(self, alpha: float):
            super().__init__()
            self.alpha = alpha

        def forward(self, x, y):
            return x * self.alpha + y

    code = re.search(r"=== assistant ===\n```cpp\n(.*?)```", EXAMPLE.read_text(), re.DOTALL).group(1)
    model = ScaledAdd(0.5)
    x, y = torch.randn(61, 1021), torch.randn(61, 1021)  # 2-d as its task (issue 64); no whole cache lines
    signature = derive_signature(model, ["x", "y"], [x, y], [model(x, y)], ["alpha"], [0.5])
    artifact = backend.compile_kernel(code, signature, tmp_path, build_cache_dir(harness_config().build_cache_dir) / "kernels")
    out = backend.wrap_kernel(artifact, signature, model)(x, y)
    torch.testing.assert_close(out, model(x, y))
    assert backend.last_profile["double_buffered_blocks"] == 0  # the first-rung form: no UB pipeline


def test_build_error_summaries_of_missing_members_and_plain_errors():
    log = "kernel.cpp:12:9: error: 'class AscendC::TPipe' has no member named 'InitBufferPool'\n"
    assert summarize_build_errors(log).startswith(
        "'InitBufferPool' is not in the Ascend C twin (TPipe has no member named 'InitBufferPool') (kernel.cpp:12)")
    log = "kernel.cpp:7:5: error: 'Gather2' is not a member of 'AscendC'\n"
    assert summarize_build_errors(log).startswith("AscendC::Gather2 is not in the Ascend C twin")
    log = "kernel.cpp: In function 'void kernel(uint8_t*)':\nkernel.cpp:6:14: error: 'AscendC::tiling' has not been declared\n"
    summary = summarize_build_errors(log)
    assert summary.startswith("AscendC::tiling is not in the Ascend C twin") and "(kernel.cpp:6)" in summary
    # the twin's static assertion inside a kernel class template: the innermost kernel.cpp frame
    # (the call), not the template's use; an earlier undeclared name still comes first
    log = ("twin_unsupported.h: In instantiation of 'void AscendC::Tanh(Args&& ...)':\n"
           "kernel.cpp:30:9:   required from 'void Op<T>::Run() [with T = float]'\n"
           "kernel.cpp:52:5:   required from here\n"
           "twin_unsupported.h:15:33: error: static assertion failed: AscendC::Tanh is not in the EvoKernel twin (see)\n")
    assert summarize_build_errors(log).startswith("AscendC::Tanh is not in the EvoKernel twin (kernel.cpp:30)")
    log += "kernel.cpp:12:5: error: 'Frob' was not declared in this scope\n"
    assert summarize_build_errors(log).startswith("'Frob' is not declared") and "(kernel.cpp:12)" in summarize_build_errors(log)
    plain = "/tmp/w/kernel.cpp:3:1: error: expected ';' before '}' token\n"
    assert summarize_build_errors(plain) is None  # not about the subset: the compiler's own first line
    assert first_error(plain) == "kernel.cpp:3: expected ';' before '}' token"


def test_a_cached_kernel_is_not_built_again(relu_task, backend, built, tmp_path, monkeypatch):
    def no_compiler(*args, **kwargs):
        raise AssertionError("g++ ran for a cached kernel")

    monkeypatch.setattr(subprocess, "Popen", no_compiler)
    monkeypatch.setattr(subprocess, "run", no_compiler)
    cache = build_cache_dir(harness_config().build_cache_dir) / "kernels"
    again = backend.compile_kernel((KERNELS / "relu_good.cpp").read_text(), relu_task.kernel_signature, tmp_path, cache)
    assert again == built["relu_good"]
