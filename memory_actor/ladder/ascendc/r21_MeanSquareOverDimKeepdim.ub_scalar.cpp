// rung: ub_scalar
// task: r21_MeanSquareOverDimKeepdim
// summary: ub_scalar rung, row reduction over a given dim, rank 3 to rank 3 (keepdim): r21_MeanSquareOverDimKeepdim; the first rung's sum on the scalar unit over tiles in UB (LocalTensor GetValue/SetValue): over the last axis each row through UB in tiles, over an earlier axis the outputs' contiguous runs, one tile per reduced index; results gathered in UB and copied out together; flag pairs between the pipes
using namespace AscendC;
constexpr int64_t TILE = 8192;  // floats per tile: 32 KiB of UB
constexpr int64_t SLICE = 8;    // floats in 32 bytes: each block's outputs start 32-byte aligned

extern "C" __global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR out, GM_ADDR workspace, GM_ADDR tiling)
{
    KernelTiling t;
    CopyTiling(&t, tiling);
    const int64_t axis = t.dim < 0 ? t.dim + 3 : t.dim;  // a negative dim counts from the end
    const int64_t len = axis == 0 ? t.x_d0 : (axis == 1 ? t.x_d1 : t.x_d2);  // the reduced axis
    const int64_t inner = axis == 0 ? t.x_d1 * t.x_d2 : (axis == 1 ? t.x_d2 : 1);  // elements after it
    const int64_t total = t.out_d0 * t.out_d1 * t.out_d2;  // keepdim: the reduced axis has length 1 in out
    const int64_t per = ((total + GetBlockNum() - 1) / GetBlockNum() + SLICE - 1) / SLICE * SLICE;  // this block's share
    const int64_t begin = per * GetBlockIdx();
    const int64_t end = begin + per < total ? begin + per : total;  // the last block's share ends at the tail
    GlobalTensor<float> xGm, outGm;
    xGm.SetGlobalBuffer((__gm__ float*)x, total * len);
    outGm.SetGlobalBuffer((__gm__ float*)out, total);
    TPipe pipe;
    TBuf<TPosition::VECCALC> tileBuf, accBuf;
    pipe.InitBuffer(tileBuf, TILE * sizeof(float));
    pipe.InitBuffer(accBuf, TILE * sizeof(float));
    LocalTensor<float> tile = tileBuf.Get<float>(), acc = accBuf.Get<float>();
    DataCopyPadExtParams<float> pad{false, 0, 0, 0.0f};
    if (inner == 1) {  // the last axis: each output is a contiguous row of len elements
        for (int64_t o0 = begin; o0 < end; o0 += TILE) {
            const int64_t count = end - o0 < TILE ? end - o0 : TILE;  // outputs gathered in `acc`
            for (int64_t o = o0; o < o0 + count; ++o) {
                float sum = 0.0f;
                for (int64_t c0 = 0; c0 < len; c0 += TILE) {
                    const int64_t n = len - c0 < TILE ? len - c0 : TILE;  // the row's tail tile is shorter
                    DataCopyPad(tile, xGm[o * len + c0], DataCopyExtParams{1, (uint32_t)(n * sizeof(float)), 0, 0, 0}, pad);
                    SetFlag<HardEvent::MTE2_S>(0);  // 1. the tile is in UB before the scalar unit reads it
                    WaitFlag<HardEvent::MTE2_S>(0);
                    for (int64_t k = 0; k < n; ++k) {  // the formula, element by element, on the tile in UB
                        const float v = tile.GetValue(k);
                        sum += v * v;
                    }
                    SetFlag<HardEvent::S_MTE2>(0);  // 2. read before the next tile overwrites it
                    WaitFlag<HardEvent::S_MTE2>(0);
                }
                acc.SetValue(o - o0, sum / (float)len);
            }
            SetFlag<HardEvent::S_MTE3>(0);  // 3. the results are in UB before they are copied out
            WaitFlag<HardEvent::S_MTE3>(0);
            DataCopyPad(outGm[o0], acc, DataCopyExtParams{1, (uint32_t)(count * sizeof(float)), 0, 0, 0});
            SetFlag<HardEvent::MTE3_S>(0);  // 4. copied out before the next results overwrite them
            WaitFlag<HardEvent::MTE3_S>(0);
        }
        return;
    }
    // an earlier axis: output p = (o, j) sums x[o, k, j] over k; outputs with one o are a contiguous run in j
    for (int64_t p = begin; p < end;) {
        const int64_t o = p / inner, j = p % inner;
        const int64_t run = inner - j < end - p ? inner - j : end - p;
        const int64_t n = run < TILE ? run : TILE;  // a run longer than a tile takes several
        for (int64_t c = 0; c < n; ++c) {
            acc.SetValue(c, 0.0f);  // the run's sums start at zero
        }
        for (int64_t k = 0; k < len; ++k) {
            DataCopyPad(tile, xGm[(o * len + k) * inner + j], DataCopyExtParams{1, (uint32_t)(n * sizeof(float)), 0, 0, 0},
                        pad);
            SetFlag<HardEvent::MTE2_S>(0);  // 1. the tile is in UB before the scalar unit reads it
            WaitFlag<HardEvent::MTE2_S>(0);
            for (int64_t c = 0; c < n; ++c) {  // the formula, element by element, on the tile in UB
                float sum = acc.GetValue(c);
                const float v = tile.GetValue(c);
                sum += v * v;
                acc.SetValue(c, sum);
            }
            SetFlag<HardEvent::S_MTE2>(0);  // 2. read before the next copy-in overwrites the tile
            WaitFlag<HardEvent::S_MTE2>(0);
        }
        for (int64_t c = 0; c < n; ++c) {
            acc.SetValue(c, acc.GetValue(c) / (float)len);  // the mean
        }
        SetFlag<HardEvent::S_MTE3>(0);  // 3. the results are in UB before they are copied out
        WaitFlag<HardEvent::S_MTE3>(0);
        DataCopyPad(outGm[p], acc, DataCopyExtParams{1, (uint32_t)(n * sizeof(float)), 0, 0, 0});
        SetFlag<HardEvent::MTE3_S>(0);  // 4. copied out before the next run overwrites `acc`
        WaitFlag<HardEvent::MTE3_S>(0);
        p += n;
    }
}
