// rung: vector
// task: r14_CumsumOfSquares
// summary: vector rung, scan over a given dim (rank 2): r14_CumsumOfSquares; down the columns (axis 0) a tile of columns is scanned on the vector unit row by row (Mul, Add into the running tile, DataCopyPad out), along the rows (axis 1) each row through UB in tiles with the running value on the scalar unit; flag pairs between the pipes
using namespace AscendC;
constexpr int64_t TILE = 8192;  // floats per tile: 32 KiB of UB
constexpr int64_t SLICE = 8;    // floats in 32 bytes: each block's columns start 32-byte aligned

extern "C" __global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR out, GM_ADDR workspace, GM_ADDR tiling)
{
    KernelTiling t;
    CopyTiling(&t, tiling);
    const int64_t rows = t.x_d0, cols = t.x_d1;
    const int64_t axis = t.dim < 0 ? t.dim + 2 : t.dim;  // a negative dim counts from the end: -1 is 1, -2 is 0
    GlobalTensor<float> xGm, outGm;
    xGm.SetGlobalBuffer((__gm__ float*)x, rows * cols);
    outGm.SetGlobalBuffer((__gm__ float*)out, rows * cols);
    TPipe pipe;
    TBuf<TPosition::VECCALC> tileBuf, accBuf;
    pipe.InitBuffer(tileBuf, TILE * sizeof(float));
    pipe.InitBuffer(accBuf, TILE * sizeof(float));
    LocalTensor<float> v = tileBuf.Get<float>(), acc = accBuf.Get<float>();
    DataCopyPadExtParams<float> pad{false, 0, 0, 0.0f};
    if (axis == 0) {  // down the columns: every column's scan runs at once, row after row, on the vector unit
        const int64_t per = ((cols + GetBlockNum() - 1) / GetBlockNum() + SLICE - 1) / SLICE * SLICE;  // columns per block
        const int64_t begin = per * GetBlockIdx();
        const int64_t end = begin + per < cols ? begin + per : cols;  // the last block's columns end at the tail
        for (int64_t c0 = begin; c0 < end; c0 += TILE) {
            const int64_t n = end - c0 < TILE ? end - c0 : TILE;  // the tail tile is narrower
            DataCopyExtParams copy{1, (uint32_t)(n * sizeof(float)), 0, 0, 0};
            Duplicate(acc, 0.0f, (int32_t)n);  // the running values of n columns
            for (int64_t r = 0; r < rows; ++r) {
                DataCopyPad(v, xGm[r * cols + c0], copy, pad);
                SetFlag<HardEvent::MTE2_V>(0);  // 1. the row's tile is in UB before the vector unit reads it
                WaitFlag<HardEvent::MTE2_V>(0);
                Mul(v, v, v, (int32_t)n);      // x * x
                Add(acc, acc, v, (int32_t)n);  // the running sums, one per column
                SetFlag<HardEvent::V_MTE3>(0);  // 2. the running sums are in UB before they are copied out
                WaitFlag<HardEvent::V_MTE3>(0);
                DataCopyPad(outGm[r * cols + c0], acc, copy);
                SetFlag<HardEvent::MTE3_MTE2>(0);  // 3. copied out before the next row's tile is copied in
                WaitFlag<HardEvent::MTE3_MTE2>(0);
                SetFlag<HardEvent::MTE3_V>(0);  // 4. and before the vector unit adds the next row into `acc`
                WaitFlag<HardEvent::MTE3_V>(0);
            }
        }
        return;
    }
    // along the rows: whole rows per block, each through UB in tiles, the running value carried on the scalar unit
    const int64_t per = (rows + GetBlockNum() - 1) / GetBlockNum();
    const int64_t first = per * GetBlockIdx();
    const int64_t last = first + per < rows ? first + per : rows;  // the last block's rows end at the tail
    for (int64_t r = first; r < last; ++r) {
        float sum = 0.0f;  // the running value, carried along the row from tile to tile
        for (int64_t c0 = 0; c0 < cols; c0 += TILE) {
            const int64_t n = cols - c0 < TILE ? cols - c0 : TILE;  // the row's tail tile is shorter
            DataCopyExtParams copy{1, (uint32_t)(n * sizeof(float)), 0, 0, 0};
            DataCopyPad(v, xGm[r * cols + c0], copy, pad);
            SetFlag<HardEvent::MTE2_S>(0);  // 1. the tile is in UB before the scalar unit reads it
            WaitFlag<HardEvent::MTE2_S>(0);
            for (int64_t i = 0; i < n; ++i) {  // sequential: each value needs the one before it
                const float e = v.GetValue(i);
                sum += e * e;
                v.SetValue(i, sum);
            }
            SetFlag<HardEvent::S_MTE3>(0);  // 2. the results are in UB before they are copied out
            WaitFlag<HardEvent::S_MTE3>(0);
            DataCopyPad(outGm[r * cols + c0], v, copy);
            SetFlag<HardEvent::MTE3_MTE2>(0);  // 3. copied out before the next tile overwrites UB
            WaitFlag<HardEvent::MTE3_MTE2>(0);
        }
    }
}
