// c = a @ b (+ bias from the workspace-free path: none) on the cube with the high-level Matmul:
// a [M x K], b [K x N], c [M x N] float; each block takes M / blocks rows (the last fewer: SetTail).
#include "lib/matmul_intf.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void kernel(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR workspace, GM_ADDR tiling)
{
    TestTiling t = ReadTiling(tiling);
    const int32_t M = t.n[0], N = t.n[1], K = t.n[2];
    SetSysWorkspace(workspace);
    TCubeTiling cube;
    cube.M = M; cube.N = N; cube.Ka = K; cube.Kb = K;
    cube.singleCoreM = (M + GetBlockNum() - 1) / GetBlockNum();
    cube.singleCoreN = N; cube.singleCoreK = K;
    cube.baseM = 64; cube.baseN = 64; cube.baseK = 32;
    const int32_t first = cube.singleCoreM * GetBlockIdx();
    if (first >= M) return;
    TPipe pipe;
    using F = matmul::MatmulType<TPosition::GM, CubeFormat::ND, float>;
    matmul::Matmul<F, F, F> mm;
    REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), mm, &cube);
    GlobalTensor<float> aGm, bGm, cGm;
    aGm.SetGlobalBuffer((__gm__ float*)a, M * K);
    bGm.SetGlobalBuffer((__gm__ float*)b, K * N);
    cGm.SetGlobalBuffer((__gm__ float*)c, M * N);
    const int32_t rows = M - first < cube.singleCoreM ? M - first : cube.singleCoreM;
    mm.SetTail(rows, N, K);
    mm.SetTensorA(aGm[first * K]);
    mm.SetTensorB(bGm);
    if (t.n[3] == 0) {
        mm.IterateAll(cGm[first * N]);
    } else {
        while (mm.Iterate()) {
            mm.GetTensorC(cGm[first * N]);
        }
    }
    mm.End();
}
