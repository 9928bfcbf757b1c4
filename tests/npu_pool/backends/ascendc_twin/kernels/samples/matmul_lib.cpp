// tensors: 3
// Matmul through the library, as the published sample does it: the host half runs
// MultiCoreMatmulTiling (the cores, the shapes [n[0] x n[2]] @ [n[2] x n[1]], half in, float
// out) and launches usedCoreNum blocks; the kernel registers the Matmul with the system
// workspace the framework set (no SetSysWorkspace), takes its share of rows and columns and
// runs IterateAll, with SetTail for the last, shorter share.
#include "lib/matmul_intf.h"
#include "tiling/tiling_api.h"
using namespace AscendC;
using namespace matmul;

void TilingFunc(const KernelTiling& shapes, HostTiling& host)
{
    const int32_t m = static_cast<int32_t>(shapes.n[0]), n = static_cast<int32_t>(shapes.n[1]),
                  k = static_cast<int32_t>(shapes.n[2]);
    auto platform = platform_ascendc::PlatformAscendCManager::GetInstance();
    matmul_tiling::MultiCoreMatmulTiling api(*platform);
    api.SetDim(static_cast<int32_t>(platform->GetCoreNumAiv()));
    api.SetAType(matmul_tiling::TPosition::GM, matmul_tiling::CubeFormat::ND, matmul_tiling::DataType::DT_FLOAT16, false);
    api.SetBType(matmul_tiling::TPosition::GM, matmul_tiling::CubeFormat::ND, matmul_tiling::DataType::DT_FLOAT16, false);
    api.SetCType(matmul_tiling::TPosition::GM, matmul_tiling::CubeFormat::ND, matmul_tiling::DataType::DT_FLOAT);
    api.SetOrgShape(m, n, k);
    api.SetShape(m, n, k);
    api.EnableBias(false);
    api.SetBufferSpace(-1, -1, -1);
    AscendC::tiling::TCubeTiling tiling;
    if (api.GetTiling(tiling) == -1) {
        host.blockDim = 0;  // the launch refuses 0 blocks
        return;
    }
    host.blockDim = static_cast<uint32_t>(tiling.usedCoreNum);
    host.SetTiling(tiling);
}

extern "C" __global__ __aicore__ void kernel(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR workspace, GM_ADDR tilingGm)
{
    AscendC::tiling::TCubeTiling tiling;
    CopyTiling(&tiling, tilingGm);
    const int32_t mBlocks = AscendC::DivCeil(tiling.M, tiling.singleCoreM);
    const int32_t mIdx = GetBlockIdx() % mBlocks, nIdx = GetBlockIdx() / mBlocks;
    const int32_t tailM = tiling.M - mIdx * tiling.singleCoreM, tailN = tiling.N - nIdx * tiling.singleCoreN;
    GlobalTensor<half> aGm, bGm;
    GlobalTensor<float> cGm;
    aGm.SetGlobalBuffer((__gm__ half*)a, tiling.M * tiling.Ka);
    bGm.SetGlobalBuffer((__gm__ half*)b, tiling.Kb * tiling.N);
    cGm.SetGlobalBuffer((__gm__ float*)c, tiling.M * tiling.N);
    TPipe pipe;
    Matmul<MatmulType<TPosition::GM, CubeFormat::ND, half>, MatmulType<TPosition::GM, CubeFormat::ND, half>,
           MatmulType<TPosition::GM, CubeFormat::ND, float>>
        mm;
    REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), mm, &tiling);
    mm.SetOrgShape(tiling.M, tiling.N, tiling.Ka, tiling.Kb);
    mm.SetTail(tailM < tiling.singleCoreM ? tailM : tiling.singleCoreM, tailN < tiling.singleCoreN ? tailN : tiling.singleCoreN);
    mm.SetTensorA(aGm[mIdx * tiling.singleCoreM * tiling.Ka], false);
    mm.SetTensorB(bGm[nIdx * tiling.singleCoreN], false);
    mm.IterateAll(cGm[mIdx * tiling.singleCoreM * tiling.N + nIdx * tiling.singleCoreN]);
    mm.End();
}
