"""The op project's files as published samples write them, through the npu-twin backend: the
operator's registration (register/op_def_registry.h: OpDef, InferShape, InferDataType, OP_ADD)
compiles and is ignored, the newer host calls (GetTilingData<T>, SetSimdNumBlocks) and kernel
macro (REGISTER_TILING_DEFAULT) work, and DTYPE_<NAME> types the kernel as the op build does.
One kernel of ours (kernels/op_project/add_op.cpp), built once into the harness build cache."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from npu_pool.backends import get_backend
from npu_pool.backends.ascendc_twin.build import op_dtype_macros
from npu_pool.backends.base import KernelBuildError
from npu_pool.paths import build_cache_dir
from npu_pool.tasks.spec import load_task
from tests.npu_pool.harness_support import SUITE, harness_config

KERNEL = Path(__file__).resolve().parent / "kernels" / "op_project" / "add_op.cpp"


@pytest.fixture(scope="module")
def add_task():
    return load_task(SUITE / "level1" / "1_Add.py", max_bytes=3 * 4 * 20_000)


def test_dtype_macros_follow_the_entrys_parameter_names_and_the_tasks_types(add_task):
    source = 'extern "C" __global__ __aicore__ void kernel(GM_ADDR a, __gm__ uint8_t* other, GM_ADDR z, GM_ADDR w, GM_ADDR t)'
    macros = op_dtype_macros(source, add_task.kernel_signature)
    assert "#define DTYPE_A float" in macros and "#define DTYPE_OTHER float" in macros and "#define DTYPE_Z float" in macros
    assert "DTYPE_W" not in macros and "DTYPE_T" not in macros  # workspace and tiling are not tensors of the op
    assert op_dtype_macros("no entry here", add_task.kernel_signature) == ""


def test_a_published_style_op_project_builds_and_runs_its_host_half(add_task, tmp_path):
    # device: the same sums on the host's 6 blocks; the registration is the graph engine's
    backend = get_backend("npu-twin")
    cache = build_cache_dir(harness_config().build_cache_dir) / "kernels"
    try:
        artifact = backend.compile_kernel(KERNEL.read_text(), add_task.kernel_signature, tmp_path, cache)
    except KernelBuildError as exc:
        pytest.fail(f"{exc}\n{exc.log[-3000:]}")
    module = backend.wrap_kernel(artifact, add_task.kernel_signature, torch.nn.Identity())
    a, b = (torch.randn(add_task.inputs[0].shape) for _ in range(2))
    torch.testing.assert_close(module(a, b), a + b, rtol=0, atol=0)
    assert backend.last_profile["blocks"] == 6


BOTH_HALVES_WITH_MATMUL = r"""
#include "kernel_operator.h"
#include "lib/matmul_intf.h"
#include "register/op_def_registry.h"
#include "tiling/platform/platform_ascendc.h"
using namespace matmul_tiling;  // the host half's habit, at global scope
namespace optiling {
static ge::graphStatus TilingFunc(gert::TilingContext* context)
{
    auto platform = platform_ascendc::PlatformAscendC(context->GetPlatformInfo());
    MultiCoreMatmulTiling tiling(platform);
    tiling.SetAType(TPosition::GM, CubeFormat::ND, matmul_tiling::DataType::DT_FLOAT);
    context->SetBlockDim(platform.GetSocVersion() == platform_ascendc::SocVersion::ASCEND310P ? 2 : 1);
    return ge::GRAPH_SUCCESS;
}
}  // namespace optiling
using namespace matmul;  // the kernel half's, in the same unit on the twin
using A = MatmulType<AscendC::TPosition::GM, CubeFormat::ND, float>;
__aicore__ inline void LocalSpace(AscendC::TPipe* pipe, Matmul<A, A, A, A>& mm)
{
    AscendC::TBuf<> space;
    pipe->InitBuffer(space, AscendC::TOTAL_VEC_LOCAL_SIZE);
    mm.SetLocalWorkspace(space.Get<uint8_t>(AscendC::TOTAL_VEC_LOCAL_SIZE));
}
"""


def test_host_and_kernel_halves_of_a_matmul_op_share_one_unit_without_ambiguity():
    # CANN compiles the halves apart; the twin compiles them together, so the host's
    # `using namespace matmul_tiling` must not collide with the kernel's matmul names
    from tests.npu_pool.backends.ascendc_twin.test_compile_errors import syntax_of

    check = syntax_of(BOTH_HALVES_WITH_MATMUL)
    assert check.returncode == 0, check.stderr[-3000:]


def test_a_mixed_matmul_kernel_runs_two_vector_blocks_per_ai_core(tmp_path):
    # device (Atlas A2): SetBlockDim(1) starts one AI core, whose two vector cores both run the
    # kernel (GetBlockIdx() 0 and 1) and share the rows of C; the twin launches two blocks
    task = load_task(SUITE / "level1" / "24_SquareMatmul.py", max_bytes=3 * 4 * 48 * 48)
    backend = get_backend("npu-twin")
    cache = build_cache_dir(harness_config().build_cache_dir) / "kernels"
    source = (KERNEL.parent / "matmul_mix_op.cpp").read_text()
    try:
        artifact = backend.compile_kernel(source, task.kernel_signature, tmp_path, cache)
    except KernelBuildError as exc:
        pytest.fail(f"{exc}\n{exc.log[-3000:]}")
    module = backend.wrap_kernel(artifact, task.kernel_signature, torch.nn.Identity())
    a, b = (torch.randn(task.inputs[0].shape) for _ in range(2))
    torch.testing.assert_close(module(a, b), a @ b, rtol=1e-4, atol=1e-4)
    assert backend.last_profile["blocks"] == 2 and backend.soc_params()["name"].startswith("Ascend910B")


def test_attributes_follow_the_operators_declared_order_matched_by_name():
    # CANN numbers GetAttrs() by the OpDef's Attr declarations; the task's scalars of
    # 20_LayerNorm are (normalized_shape, eps): a LayerNorm declaring only "epsilon" reads eps first
    from npu_pool.backends.ascendc_twin.build import attribute_order

    scalars = ["normalized_shape", "eps"]
    assert attribute_order(scalars, 'this->Attr("epsilon").AttrType(OPTIONAL).Float(1e-05);') == ["eps", "normalized_shape"]
    assert attribute_order(scalars, "no declaration") == scalars
    assert attribute_order(scalars, 'Attr("momentum")') == scalars  # no match: the task's order
    assert attribute_order(["negative_slope"], 'Attr("negative_slope")') == ["negative_slope"]
