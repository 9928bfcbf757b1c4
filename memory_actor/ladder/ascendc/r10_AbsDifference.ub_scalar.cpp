// rung: ub_scalar
// task: r10_AbsDifference
// summary: ub_scalar rung, elementwise family: r10_AbsDifference (two inputs of one shape), one UB tile loop per block (DataCopyPad of both inputs in, the first rung's formula on the scalar unit with LocalTensor GetValue/SetValue, DataCopyPad out), three flag pairs
using namespace AscendC;
constexpr int64_t TILE = 8192;  // floats per tile: 32 KiB of UB
constexpr int64_t SLICE = 8;    // floats in 32 bytes: each block's share starts 32-byte aligned

extern "C" __global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR y, GM_ADDR out, GM_ADDR workspace, GM_ADDR tiling)
{
    KernelTiling t;
    CopyTiling(&t, tiling);
    const int64_t total = t.out_d0 * t.out_d1;  // all three of one shape: one flat index walks them together
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
    LocalTensor<float> xTile = xBuf.Get<float>(), yTile = yBuf.Get<float>();
    for (int64_t off = begin; off < end; off += TILE) {
        const int64_t n = end - off < TILE ? end - off : TILE;  // the tail tile is shorter
        DataCopyExtParams copy{1, (uint32_t)(n * sizeof(float)), 0, 0, 0};
        DataCopyPad(xTile, xGm[off], copy, DataCopyPadExtParams<float>{false, 0, 0, 0.0f});
        DataCopyPad(yTile, yGm[off], copy, DataCopyPadExtParams<float>{false, 0, 0, 0.0f});
        SetFlag<HardEvent::MTE2_S>(0);  // 1. both tiles are in UB before the scalar unit reads them
        WaitFlag<HardEvent::MTE2_S>(0);
        for (int64_t i = 0; i < n; ++i) {  // the formula, element by element, on the tile in UB
            const float d = xTile.GetValue(i) - yTile.GetValue(i);
            xTile.SetValue(i, d < 0.0f ? -d : d);  // the result over x's tile
        }
        SetFlag<HardEvent::S_MTE3>(0);  // 2. the results are in UB before they are copied out
        WaitFlag<HardEvent::S_MTE3>(0);
        DataCopyPad(outGm[off], xTile, copy);
        SetFlag<HardEvent::MTE3_MTE2>(0);  // 3. copied out before the next tile overwrites UB
        WaitFlag<HardEvent::MTE3_MTE2>(0);
    }
}
