// task: level1/4_ReLU.py
// expect-gate: correctness
// (at the second size: right at the task's own, friendly size)
// WRONG at an awkward size: 8 blocks each take total / 8 elements (the remainder is dropped) and
// stream only whole tiles of 512 through the queues (a partial last tile is skipped). Every
// block's slice is a whole number of tiles at the fitted 128 x 256, so it passes there.
using namespace AscendC;

constexpr int32_t BUFFER_NUM = 2;
constexpr int64_t TILE = 512;  // floats per tile (2 KiB)
constexpr int64_t USED_BLOCKS = 8;

extern "C" __global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR out, GM_ADDR workspace, GM_ADDR tiling)
{
    KernelTiling t;
    CopyTiling(&t, tiling);
    if (GetBlockIdx() >= USED_BLOCKS) {
        return;
    }
    const int64_t per = t.x_d0 * t.x_d1 / USED_BLOCKS;
    GlobalTensor<float> xGm, outGm;
    xGm.SetGlobalBuffer((__gm__ float*)x + GetBlockIdx() * per, per);
    outGm.SetGlobalBuffer((__gm__ float*)out + GetBlockIdx() * per, per);
    TPipe pipe;
    TQue<TPosition::VECIN, BUFFER_NUM> inQueue;
    TQue<TPosition::VECOUT, BUFFER_NUM> outQueue;
    pipe.InitBuffer(inQueue, BUFFER_NUM, TILE * sizeof(float));
    pipe.InitBuffer(outQueue, BUFFER_NUM, TILE * sizeof(float));
    for (int64_t off = 0; off + TILE <= per; off += TILE) {
        LocalTensor<float> xLocal = inQueue.AllocTensor<float>();
        DataCopy(xLocal, xGm[off], TILE);
        inQueue.EnQue(xLocal);
        LocalTensor<float> xIn = inQueue.DeQue<float>();
        LocalTensor<float> yLocal = outQueue.AllocTensor<float>();
        Relu(yLocal, xIn, static_cast<int32_t>(TILE));
        outQueue.EnQue(yLocal);
        inQueue.FreeTensor(xIn);
        LocalTensor<float> yOut = outQueue.DeQue<float>();
        DataCopy(outGm[off], yOut, TILE);
        outQueue.FreeTensor(yOut);
    }
}
