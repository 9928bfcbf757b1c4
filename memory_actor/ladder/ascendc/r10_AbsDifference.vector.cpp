// rung: vector
// task: r10_AbsDifference
// summary: vector rung, elementwise family, two inputs of one shape: r10_AbsDifference, one UB tile loop per block (both tiles in by DataCopyPad, Sub/Abs, DataCopyPad out), three flag pairs
using namespace AscendC;
constexpr int64_t TILE = 8192;  // floats per tile: 32 KiB of UB
constexpr int64_t SLICE = 8;    // floats in 32 bytes: each block's share starts 32-byte aligned

extern "C" __global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR y, GM_ADDR out, GM_ADDR workspace, GM_ADDR tiling)
{
    KernelTiling t;
    CopyTiling(&t, tiling);
    const int64_t total = t.out_d0 * t.out_d1;
    const int64_t per = ((total + GetBlockNum() - 1) / GetBlockNum() + SLICE - 1) / SLICE * SLICE;  // this block's share
    const int64_t begin = per * GetBlockIdx();
    const int64_t end = begin + per < total ? begin + per : total;  // the last block's share ends at the tail
    GlobalTensor<float> xGm, yGm, outGm;
    xGm.SetGlobalBuffer((__gm__ float*)x, total);
    yGm.SetGlobalBuffer((__gm__ float*)y, total);
    outGm.SetGlobalBuffer((__gm__ float*)out, total);
    TPipe pipe;
    TBuf<TPosition::VECCALC> xBuf, yBuf;
    pipe.InitBuffer(xBuf, TILE * sizeof(float));
    pipe.InitBuffer(yBuf, TILE * sizeof(float));
    LocalTensor<float> v = xBuf.Get<float>(), w = yBuf.Get<float>();
    for (int64_t off = begin; off < end; off += TILE) {
        const int64_t n = end - off < TILE ? end - off : TILE;  // the tail tile is shorter
        DataCopyExtParams copy{1, (uint32_t)(n * sizeof(float)), 0, 0, 0};
        DataCopyPad(v, xGm[off], copy, DataCopyPadExtParams<float>{false, 0, 0, 0.0f});
        DataCopyPad(w, yGm[off], copy, DataCopyPadExtParams<float>{false, 0, 0, 0.0f});
        SetFlag<HardEvent::MTE2_V>(0);  // 1. both tiles are in UB before the vector unit reads them
        WaitFlag<HardEvent::MTE2_V>(0);
        Sub(v, v, w, (int32_t)n);  // x - y
        Abs(v, v, (int32_t)n);     // |x - y|
        SetFlag<HardEvent::V_MTE3>(0);  // 2. the result is in UB before it is copied out
        WaitFlag<HardEvent::V_MTE3>(0);
        DataCopyPad(outGm[off], v, copy);
        SetFlag<HardEvent::MTE3_MTE2>(0);  // 3. copied out before the next tiles overwrite UB
        WaitFlag<HardEvent::MTE3_MTE2>(0);
    }
}
