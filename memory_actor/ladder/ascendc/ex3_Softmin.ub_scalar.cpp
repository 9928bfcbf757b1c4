// rung: ub_scalar
// task: ex3_Softmin
// summary: ub_scalar rung, softmax/normalisation family: ex3_Softmin, the first rung's three passes over each row on the scalar unit over tiles in UB (DataCopyPad in, LocalTensor GetValue/SetValue, DataCopyPad out in the last pass), flag pairs between the pipes
using namespace AscendC;
constexpr int64_t TILE = 8192;  // floats of a row per tile: 32 KiB of UB (a longer row takes several)

extern "C" __global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR out, GM_ADDR workspace, GM_ADDR tiling)
{
    KernelTiling t;
    CopyTiling(&t, tiling);
    const int64_t rows = t.x_d0, cols = t.x_d1;
    const int64_t per = (rows + GetBlockNum() - 1) / GetBlockNum();  // whole rows per block
    const int64_t first = per * GetBlockIdx();
    const int64_t last = first + per < rows ? first + per : rows;  // the last block's rows end at the tail
    GlobalTensor<float> xGm, outGm;
    xGm.SetGlobalBuffer((__gm__ float*)x, rows * cols);
    outGm.SetGlobalBuffer((__gm__ float*)out, rows * cols);
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, TILE * sizeof(float));
    LocalTensor<float> tile = buf.Get<float>();
    DataCopyPadExtParams<float> pad{false, 0, 0, 0.0f};
    for (int64_t r = first; r < last; ++r) {
        float low = 3.402823466e38f;  // softmax of -x: subtract the largest -x, the row's minimum
        for (int64_t c0 = 0; c0 < cols; c0 += TILE) {  // pass 1: the row's minimum
            const int64_t n = cols - c0 < TILE ? cols - c0 : TILE;  // the row's tail tile is shorter
            DataCopyPad(tile, xGm[r * cols + c0], DataCopyExtParams{1, (uint32_t)(n * sizeof(float)), 0, 0, 0}, pad);
            SetFlag<HardEvent::MTE2_S>(0);  // 1. the tile is in UB before the scalar unit reads it
            WaitFlag<HardEvent::MTE2_S>(0);
            for (int64_t c = 0; c < n; ++c) {  // the formula, element by element, on the tile in UB
                const float v = tile.GetValue(c);
                low = v < low ? v : low;
            }
            SetFlag<HardEvent::S_MTE2>(0);  // 2. read before the next tile overwrites it
            WaitFlag<HardEvent::S_MTE2>(0);
        }
        float sum = 0.0f;
        for (int64_t c0 = 0; c0 < cols; c0 += TILE) {  // pass 2: the sum of the exponentials
            const int64_t n = cols - c0 < TILE ? cols - c0 : TILE;
            DataCopyPad(tile, xGm[r * cols + c0], DataCopyExtParams{1, (uint32_t)(n * sizeof(float)), 0, 0, 0}, pad);
            SetFlag<HardEvent::MTE2_S>(0);  // 1. as above
            WaitFlag<HardEvent::MTE2_S>(0);
            for (int64_t c = 0; c < n; ++c) {  // the formula, element by element, on the tile in UB
                sum += expf(low - tile.GetValue(c));
            }
            SetFlag<HardEvent::S_MTE2>(0);  // 2. as above
            WaitFlag<HardEvent::S_MTE2>(0);
        }
        for (int64_t c0 = 0; c0 < cols; c0 += TILE) {  // pass 3: each element's share, written and copied out
            const int64_t n = cols - c0 < TILE ? cols - c0 : TILE;
            DataCopyExtParams copy{1, (uint32_t)(n * sizeof(float)), 0, 0, 0};
            DataCopyPad(tile, xGm[r * cols + c0], copy, pad);
            SetFlag<HardEvent::MTE2_S>(0);  // 1. as above
            WaitFlag<HardEvent::MTE2_S>(0);
            for (int64_t c = 0; c < n; ++c) {  // the formula, element by element, on the tile in UB
                tile.SetValue(c, expf(low - tile.GetValue(c)) / sum);
            }
            SetFlag<HardEvent::S_MTE3>(0);  // 3. the results are in UB before they are copied out
            WaitFlag<HardEvent::S_MTE3>(0);
            DataCopyPad(outGm[r * cols + c0], tile, copy);
            SetFlag<HardEvent::MTE3_MTE2>(0);  // 4. copied out before the next tile overwrites UB
            WaitFlag<HardEvent::MTE3_MTE2>(0);
        }
    }
}
