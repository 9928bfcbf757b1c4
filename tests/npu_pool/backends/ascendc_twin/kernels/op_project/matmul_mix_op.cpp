// task: level1/24_SquareMatmul.py
// A mixed kernel in the op project's form, written by us: the vector code drives the Matmul
// library, so CANN builds it mixed and SetBlockDim counts AI cores. On Atlas A2 one AI core is
// one cube and two vector cores: SetBlockDim(1) runs two vector blocks, and the host tiling's
// SetDim(2) splits the rows of C between them (GetBlockIdx() 0 and 1).
#include "kernel_operator.h"
#include "lib/matmul_intf.h"
#include "register/op_def_registry.h"
#include "tiling/tiling_api.h"

namespace optiling {
BEGIN_TILING_DATA_DEF(MixTiling)
TILING_DATA_FIELD_DEF_STRUCT(TCubeTiling, cube);
END_TILING_DATA_DEF;
REGISTER_TILING_DATA_CLASS(MixOp, MixTiling)

static ge::graphStatus TilingFunc(gert::TilingContext* context)
{
    auto platform = platform_ascendc::PlatformAscendC(context->GetPlatformInfo());
    const int32_t m = static_cast<int32_t>(context->GetInputShape(0)->GetOriginShape().GetDim(0));
    const int32_t k = static_cast<int32_t>(context->GetInputShape(0)->GetOriginShape().GetDim(1));
    const int32_t n = static_cast<int32_t>(context->GetInputShape(1)->GetOriginShape().GetDim(1));
    matmul_tiling::MultiCoreMatmulTiling api(platform);
    api.SetDim(2);  // vector blocks that start the cube's work
    api.SetAType(matmul_tiling::TPosition::GM, matmul_tiling::CubeFormat::ND, matmul_tiling::DataType::DT_FLOAT);
    api.SetBType(matmul_tiling::TPosition::GM, matmul_tiling::CubeFormat::ND, matmul_tiling::DataType::DT_FLOAT);
    api.SetCType(matmul_tiling::TPosition::GM, matmul_tiling::CubeFormat::ND, matmul_tiling::DataType::DT_FLOAT);
    api.SetShape(m, n, k);
    api.SetOrgShape(m, n, k);
    api.EnableBias(false);
    MixTiling tiling;
    if (api.GetTiling(tiling.cube) == -1) return ge::GRAPH_FAILED;
    context->SetBlockDim(1);  // one AI core
    tiling.SaveToBuffer(context->GetRawTilingData()->GetData(), context->GetRawTilingData()->GetCapacity());
    context->GetRawTilingData()->SetDataSize(tiling.GetDataSize());
    *context->GetWorkspaceSizes(1) = platform.GetLibApiWorkSpaceSize();
    return ge::GRAPH_SUCCESS;
}
}  // namespace optiling

using namespace matmul;

extern "C" __global__ __aicore__ void kernel(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR workspace, GM_ADDR tiling)
{
    GET_TILING_DATA(t, tiling);
    const int32_t row = static_cast<int32_t>(AscendC::GetBlockIdx()) * t.cube.singleCoreM;
    if (row >= t.cube.M) return;
    AscendC::GlobalTensor<float> aGm, bGm, cGm;
    aGm.SetGlobalBuffer((__gm__ float*)a, t.cube.M * t.cube.Ka);
    bGm.SetGlobalBuffer((__gm__ float*)b, t.cube.Kb * t.cube.N);
    cGm.SetGlobalBuffer((__gm__ float*)c, t.cube.M * t.cube.N);
    AscendC::TPipe pipe;
    Matmul<MatmulType<AscendC::TPosition::GM, CubeFormat::ND, float>, MatmulType<AscendC::TPosition::GM, CubeFormat::ND, float>,
           MatmulType<AscendC::TPosition::GM, CubeFormat::ND, float>>
        mm;
    REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), mm, &t.cube);
    const int32_t rows = t.cube.M - row < t.cube.singleCoreM ? t.cube.M - row : t.cube.singleCoreM;
    mm.SetTail(rows, t.cube.N);
    mm.SetTensorA(aGm[row * t.cube.Ka]);
    mm.SetTensorB(bGm);
    mm.IterateAll(cGm[row * t.cube.N]);
    mm.End();
}
