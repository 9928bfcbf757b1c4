// task: level1/4_ReLU.py
// expect-gate: ok
// 4_ReLU in the two-half form: the host half (TilingFunc) splits the elements over 8 blocks
// and sizes the tiles; the kernel reads its own tiling struct, as CANN's samples do.
#include "kernel_operator.h"
using namespace AscendC;

struct ReluTiling {
    uint32_t totalLength;  // elements
    uint32_t blockLength;  // elements per block (a multiple of 8: 32-byte aligned slices)
    uint32_t tileLength;   // elements per tile
};

void TilingFunc(const KernelTiling& shapes, HostTiling& host)
{
    ReluTiling t;
    t.totalLength = static_cast<uint32_t>(shapes.x_d0 * shapes.x_d1);
    host.blockDim = host.coreNum < 8 ? host.coreNum : 8;
    t.blockLength = AscendC::DivCeil(AscendC::DivCeil(t.totalLength, host.blockDim), 8u) * 8;
    t.tileLength = 2048;
    host.SetTiling(t);
}

extern "C" __global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR out, GM_ADDR workspace, GM_ADDR tiling)
{
    ReluTiling t;
    CopyTiling(&t, tiling);
    const uint32_t begin = GetBlockIdx() * t.blockLength;
    if (begin >= t.totalLength) {
        return;
    }
    const uint32_t length = t.totalLength - begin < t.blockLength ? t.totalLength - begin : t.blockLength;
    GlobalTensor<float> xGm, outGm;
    xGm.SetGlobalBuffer((__gm__ float*)x + begin, length);
    outGm.SetGlobalBuffer((__gm__ float*)out + begin, length);
    TPipe pipe;
    TQue<TPosition::VECIN, 2> inQueue;
    TQue<TPosition::VECOUT, 2> outQueue;
    pipe.InitBuffer(inQueue, 2, t.tileLength * sizeof(float));
    pipe.InitBuffer(outQueue, 2, t.tileLength * sizeof(float));
    for (uint32_t off = 0; off < length; off += t.tileLength) {
        const uint32_t count = length - off < t.tileLength ? length - off : t.tileLength;
        DataCopyExtParams params{1, static_cast<uint32_t>(count * sizeof(float)), 0, 0, 0};
        LocalTensor<float> xLocal = inQueue.AllocTensor<float>();
        DataCopyPad(xLocal, xGm[off], params, DataCopyPadExtParams<float>{false, 0, 0, 0.0f});
        inQueue.EnQue(xLocal);
        LocalTensor<float> xIn = inQueue.DeQue<float>();
        LocalTensor<float> yLocal = outQueue.AllocTensor<float>();
        Relu(yLocal, xIn, static_cast<int32_t>((count + 7) / 8 * 8));
        outQueue.EnQue(yLocal);
        inQueue.FreeTensor(xIn);
        LocalTensor<float> yOut = outQueue.DeQue<float>();
        DataCopyPad(outGm[off], yOut, params);
        outQueue.FreeTensor(yOut);
    }
}
