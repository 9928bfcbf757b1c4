// rung: ub_scalar
// task: ex2_MeanAbsOverRows
// summary: ub_scalar rung, row reduction family: ex2_MeanAbsOverRows, each row through UB in tiles (DataCopyPad in), the first rung's sum on the scalar unit with LocalTensor GetValue, the row results gathered in UB and copied out together, three flag pairs
using namespace AscendC;
constexpr int64_t TILE = 8192;      // floats of a row per tile: 32 KiB of UB (a longer row takes several)
constexpr int64_t OUT_TILE = 1024;  // row results gathered in UB before one copy-out
constexpr int64_t SLICE = 8;        // floats in 32 bytes: each block's rows start a 32-byte slice of out

extern "C" __global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR out, GM_ADDR workspace, GM_ADDR tiling)
{
    KernelTiling t;
    CopyTiling(&t, tiling);
    const int64_t rows = t.x_d0, cols = t.x_d1;
    const int64_t per = ((rows + GetBlockNum() - 1) / GetBlockNum() + SLICE - 1) / SLICE * SLICE;  // whole rows per block
    const int64_t first = per * GetBlockIdx();
    const int64_t last = first + per < rows ? first + per : rows;  // the last block's rows end at the tail
    GlobalTensor<float> xGm, outGm;
    xGm.SetGlobalBuffer((__gm__ float*)x, rows * cols);
    outGm.SetGlobalBuffer((__gm__ float*)out, rows);
    TPipe pipe;
    TBuf<TPosition::VECCALC> tileBuf, resBuf;
    pipe.InitBuffer(tileBuf, TILE * sizeof(float));
    pipe.InitBuffer(resBuf, OUT_TILE * sizeof(float));
    LocalTensor<float> tile = tileBuf.Get<float>(), res = resBuf.Get<float>();
    for (int64_t r0 = first; r0 < last; r0 += OUT_TILE) {
        const int64_t count = last - r0 < OUT_TILE ? last - r0 : OUT_TILE;
        for (int64_t r = r0; r < r0 + count; ++r) {
            float sum = 0.0f;
            for (int64_t c0 = 0; c0 < cols; c0 += TILE) {
                const int64_t n = cols - c0 < TILE ? cols - c0 : TILE;  // the row's tail tile is shorter
                DataCopyPad(tile, xGm[r * cols + c0], DataCopyExtParams{1, (uint32_t)(n * sizeof(float)), 0, 0, 0},
                            DataCopyPadExtParams<float>{false, 0, 0, 0.0f});
                SetFlag<HardEvent::MTE2_S>(0);  // 1. the tile is in UB before the scalar unit reads it
                WaitFlag<HardEvent::MTE2_S>(0);
                for (int64_t c = 0; c < n; ++c) {  // the formula, element by element, on the tile in UB
                    const float v = tile.GetValue(c);
                    sum += v < 0.0f ? -v : v;
                }
                SetFlag<HardEvent::S_MTE2>(0);  // 2. read before the next tile overwrites it
                WaitFlag<HardEvent::S_MTE2>(0);
            }
            res.SetValue(r - r0, sum / (float)cols);  // the row's result
        }
        SetFlag<HardEvent::S_MTE3>(0);  // 3. the results are in UB before they are copied out
        WaitFlag<HardEvent::S_MTE3>(0);
        DataCopyPad(outGm[r0], res, DataCopyExtParams{1, (uint32_t)(count * sizeof(float)), 0, 0, 0});
        SetFlag<HardEvent::MTE3_S>(0);  // 4. copied out before the next rows' results overwrite them
        WaitFlag<HardEvent::MTE3_S>(0);
    }
}
