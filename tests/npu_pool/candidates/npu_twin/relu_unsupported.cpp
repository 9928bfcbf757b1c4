// task: level1/4_ReLU.py
// expect-gate: compile
// Uses AscendC::Tanh, an API outside the twin: a compile-gate verdict naming it.
using namespace AscendC;

constexpr int32_t BUFFER_NUM = 2;
constexpr int64_t TILE = 2048;  // floats per tile (8 KiB)

extern "C" __global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR out, GM_ADDR workspace, GM_ADDR tiling)
{
    KernelTiling t;
    CopyTiling(&t, tiling);
    const int64_t total = t.x_d0 * t.x_d1;
    const int64_t per = ((total + GetBlockNum() - 1) / GetBlockNum() + 7) / 8 * 8;
    const int64_t begin = GetBlockIdx() * per;
    const int64_t length = begin >= total ? 0 : (total - begin < per ? total - begin : per);
    if (length == 0) {
        return;
    }
    GlobalTensor<float> xGm, outGm;
    xGm.SetGlobalBuffer((__gm__ float*)x + begin, length);
    outGm.SetGlobalBuffer((__gm__ float*)out + begin, length);
    TPipe pipe;
    TQue<TPosition::VECIN, BUFFER_NUM> inQueue;
    TQue<TPosition::VECOUT, BUFFER_NUM> outQueue;
    pipe.InitBuffer(inQueue, BUFFER_NUM, TILE * sizeof(float));
    pipe.InitBuffer(outQueue, BUFFER_NUM, TILE * sizeof(float));
    for (int64_t off = 0; off < length; off += TILE) {
        const int64_t count = length - off < TILE ? length - off : TILE;
        DataCopyExtParams params{1, static_cast<uint32_t>(count * sizeof(float)), 0, 0, 0};
        LocalTensor<float> xLocal = inQueue.AllocTensor<float>();
        DataCopyPad(xLocal, xGm[off], params, DataCopyPadExtParams<float>{false, 0, 0, 0.0f});
        inQueue.EnQue(xLocal);
        LocalTensor<float> xIn = inQueue.DeQue<float>();
        LocalTensor<float> yLocal = outQueue.AllocTensor<float>();
        Tanh(yLocal, xIn, static_cast<int32_t>((count + 7) / 8 * 8));  // a library API the twin lacks
        outQueue.EnQue(yLocal);
        inQueue.FreeTensor(xIn);
        LocalTensor<float> yOut = outQueue.DeQue<float>();
        DataCopyPad(outGm[off], yOut, params);
        outQueue.FreeTensor(yOut);
    }
}
