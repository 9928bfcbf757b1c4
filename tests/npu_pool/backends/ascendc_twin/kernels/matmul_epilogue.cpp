// c = relu(a @ b) with a fused epilogue: each baseM x baseN block of the product comes into UB
// (GetTensorC to a LocalTensor), Relu runs on the vector unit, a strided DataCopy writes it
// to its place in c. One block; M, N multiples of 32, K of 8; iterateOrder 0 (along M first).
#include "lib/matmul_intf.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void kernel(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR workspace, GM_ADDR tiling)
{
    TestTiling t = ReadTiling(tiling);
    const int32_t M = t.n[0], N = t.n[1], K = t.n[2];
    SetSysWorkspace(workspace);
    TCubeTiling cube;
    cube.M = M; cube.N = N; cube.Ka = K; cube.Kb = K;
    cube.singleCoreM = M; cube.singleCoreN = N; cube.singleCoreK = K;
    cube.baseM = 32; cube.baseN = 32; cube.baseK = 64;
    TPipe pipe;
    TQue<TPosition::VECIN, 1> cQueue;
    pipe.InitBuffer(cQueue, 1, 32 * 32 * sizeof(float));
    using F = matmul::MatmulType<TPosition::GM, CubeFormat::ND, float>;
    matmul::Matmul<F, F, F> mm;
    REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), mm, &cube);
    GlobalTensor<float> aGm, bGm, cGm;
    aGm.SetGlobalBuffer((__gm__ float*)a, M * K);
    bGm.SetGlobalBuffer((__gm__ float*)b, K * N);
    cGm.SetGlobalBuffer((__gm__ float*)c, M * N);
    mm.SetTensorA(aGm);
    mm.SetTensorB(bGm);
    const int32_t mIter = M / 32;
    for (int32_t i = 0; mm.Iterate(); ++i) {
        LocalTensor<float> block = cQueue.AllocTensor<float>();
        SetFlag<HardEvent::MTE3_V>(EVENT_ID0);
        WaitFlag<HardEvent::MTE3_V>(EVENT_ID0);
        mm.GetTensorC(block);
        cQueue.EnQue(block);
        LocalTensor<float> ready = cQueue.DeQue<float>();
        Relu(ready, ready, 32 * 32);
        const int32_t mi = i % mIter, ni = i / mIter;
        DataCopyParams rows{32, 32 * sizeof(float) / 32, 0, static_cast<uint16_t>((N - 32) * sizeof(float) / 32)};
        SetFlag<HardEvent::V_MTE3>(0);
        WaitFlag<HardEvent::V_MTE3>(0);
        DataCopy(cGm[mi * 32 * N + ni * 32], ready, rows);
        cQueue.FreeTensor(ready);
    }
    mm.End();
}
