// c = a @ b^T: a [M x K] half, b [N x K] half (B transposed), c [M x N] float; each block
// takes N / blocks columns of c.
#include "lib/matmul_intf.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void kernel(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR workspace, GM_ADDR tiling)
{
    TestTiling t = ReadTiling(tiling);
    const int32_t M = t.n[0], N = t.n[1], K = t.n[2];
    SetSysWorkspace(workspace);
    TCubeTiling cube;
    cube.M = M; cube.N = N; cube.Ka = K; cube.Kb = K;
    cube.singleCoreM = M; cube.singleCoreN = N / GetBlockNum(); cube.singleCoreK = K;
    cube.baseM = 32; cube.baseN = 32; cube.baseK = 64;
    TPipe pipe;
    using H = matmul::MatmulType<TPosition::GM, CubeFormat::ND, half>;
    using F = matmul::MatmulType<TPosition::GM, CubeFormat::ND, float>;
    matmul::Matmul<H, H, F> mm;
    REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), mm, &cube);
    GlobalTensor<half> aGm, bGm;
    GlobalTensor<float> cGm;
    aGm.SetGlobalBuffer((__gm__ half*)a, M * K);
    bGm.SetGlobalBuffer((__gm__ half*)b, N * K);
    cGm.SetGlobalBuffer((__gm__ float*)c, M * N);
    const int32_t col = cube.singleCoreN * GetBlockIdx();
    mm.SetTensorA(aGm);
    mm.SetTensorB(bGm[col * K], true);
    mm.IterateAll(cGm[col]);
    mm.End();
}
