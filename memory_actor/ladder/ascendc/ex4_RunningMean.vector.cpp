// rung: vector
// task: ex4_RunningMean
// summary: vector rung, scan family: ex4_RunningMean, each row through UB in tiles (DataCopyPad in, the running value on the scalar unit over UB, carried from tile to tile, DataCopyPad out), three flag pairs
using namespace AscendC;
constexpr int64_t TILE = 8192;  // floats of a row per tile: 32 KiB of UB (a longer row takes several)

extern "C" __global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR out, GM_ADDR workspace, GM_ADDR tiling)
{
    KernelTiling t;
    CopyTiling(&t, tiling);
    const int64_t rows = t.x_d0, cols = t.x_d1;
    const int64_t per = (rows + GetBlockNum() - 1) / GetBlockNum();  // a scan is sequential along a row: whole rows per block
    const int64_t first = per * GetBlockIdx();
    const int64_t last = first + per < rows ? first + per : rows;  // the last block's rows end at the tail
    GlobalTensor<float> xGm, outGm;
    xGm.SetGlobalBuffer((__gm__ float*)x, rows * cols);
    outGm.SetGlobalBuffer((__gm__ float*)out, rows * cols);
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, TILE * sizeof(float));
    LocalTensor<float> v = buf.Get<float>();
    for (int64_t r = first; r < last; ++r) {
        float sum = 0.0f;  // the running value, carried along the row from tile to tile
        for (int64_t c0 = 0; c0 < cols; c0 += TILE) {
            const int64_t n = cols - c0 < TILE ? cols - c0 : TILE;  // the row's tail tile is shorter
            DataCopyExtParams copy{1, (uint32_t)(n * sizeof(float)), 0, 0, 0};
            DataCopyPad(v, xGm[r * cols + c0], copy, DataCopyPadExtParams<float>{false, 0, 0, 0.0f});
            SetFlag<HardEvent::MTE2_S>(0);  // 1. the tile is in UB before the scalar unit reads it
            WaitFlag<HardEvent::MTE2_S>(0);
            for (int64_t i = 0; i < n; ++i) {  // sequential: each value needs the one before it
                sum += v.GetValue(i);
                v.SetValue(i, sum / (float)(c0 + i + 1));
            }
            SetFlag<HardEvent::S_MTE3>(0);  // 2. the results are in UB before they are copied out
            WaitFlag<HardEvent::S_MTE3>(0);
            DataCopyPad(outGm[r * cols + c0], v, copy);
            SetFlag<HardEvent::MTE3_MTE2>(0);  // 3. copied out before the next tile overwrites UB
            WaitFlag<HardEvent::MTE3_MTE2>(0);
        }
    }
}
