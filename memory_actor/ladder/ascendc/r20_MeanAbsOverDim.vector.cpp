// rung: vector
// task: r20_MeanAbsOverDim
// summary: vector rung, row reduction over a given dim (rank 3 to rank 2): r20_MeanAbsOverDim; over the last axis each row through UB in tiles (Abs, ReduceSum), over an earlier axis the outputs' contiguous runs accumulated in UB (Abs, Add per reduced index, Muls); flag pairs between the pipes
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
    const int64_t total = t.out_d0 * t.out_d1;  // one output element per (outer, inner) pair
    const int64_t per = ((total + GetBlockNum() - 1) / GetBlockNum() + SLICE - 1) / SLICE * SLICE;  // this block's share
    const int64_t begin = per * GetBlockIdx();
    const int64_t end = begin + per < total ? begin + per : total;  // the last block's share ends at the tail
    GlobalTensor<float> xGm, outGm;
    xGm.SetGlobalBuffer((__gm__ float*)x, total * len);
    outGm.SetGlobalBuffer((__gm__ float*)out, total);
    TPipe pipe;
    TBuf<TPosition::VECCALC> tileBuf, accBuf, workBuf, sumBuf;
    pipe.InitBuffer(tileBuf, TILE * sizeof(float));
    pipe.InitBuffer(accBuf, TILE * sizeof(float));
    pipe.InitBuffer(workBuf, TILE * sizeof(float));
    pipe.InitBuffer(sumBuf, SLICE * sizeof(float));
    LocalTensor<float> v = tileBuf.Get<float>(), acc = accBuf.Get<float>();
    LocalTensor<float> work = workBuf.Get<float>(), sum = sumBuf.Get<float>();
    DataCopyPadExtParams<float> pad{false, 0, 0, 0.0f};
    if (inner == 1) {  // the last axis: each output is a contiguous row of len elements
        for (int64_t o0 = begin; o0 < end; o0 += TILE) {
            const int64_t count = end - o0 < TILE ? end - o0 : TILE;  // outputs gathered in `acc`
            for (int64_t o = o0; o < o0 + count; ++o) {
                float total_abs = 0.0f;
                for (int64_t c0 = 0; c0 < len; c0 += TILE) {
                    const int64_t n = len - c0 < TILE ? len - c0 : TILE;  // the row's tail tile is shorter
                    DataCopyPad(v, xGm[o * len + c0], DataCopyExtParams{1, (uint32_t)(n * sizeof(float)), 0, 0, 0}, pad);
                    SetFlag<HardEvent::MTE2_V>(0);  // 1. the tile is in UB before the vector unit reads it
                    WaitFlag<HardEvent::MTE2_V>(0);
                    Abs(v, v, (int32_t)n);
                    ReduceSum(sum, v, work, (int32_t)n);
                    SetFlag<HardEvent::V_S>(0);  // 2. the sum is in UB before the scalar unit reads it
                    WaitFlag<HardEvent::V_S>(0);
                    total_abs += sum.GetValue(0);
                    SetFlag<HardEvent::S_V>(0);  // 3. read before the next ReduceSum overwrites it
                    WaitFlag<HardEvent::S_V>(0);
                }
                acc.SetValue(o - o0, total_abs / (float)len);
            }
            SetFlag<HardEvent::S_MTE3>(0);  // 4. the results are in UB before they are copied out
            WaitFlag<HardEvent::S_MTE3>(0);
            DataCopyPad(outGm[o0], acc, DataCopyExtParams{1, (uint32_t)(count * sizeof(float)), 0, 0, 0});
            SetFlag<HardEvent::MTE3_S>(0);  // 5. copied out before the next results overwrite them
            WaitFlag<HardEvent::MTE3_S>(0);
        }
        return;
    }
    // an earlier axis: output p = (o, j) sums x[o, k, j] over k; outputs with one o are a contiguous run in j
    for (int64_t p = begin; p < end;) {
        const int64_t o = p / inner, j = p % inner;
        const int64_t run = inner - j < end - p ? inner - j : end - p;
        const int64_t n = run < TILE ? run : TILE;  // a run longer than a tile takes several
        Duplicate(acc, 0.0f, (int32_t)n);
        for (int64_t k = 0; k < len; ++k) {
            DataCopyPad(v, xGm[(o * len + k) * inner + j], DataCopyExtParams{1, (uint32_t)(n * sizeof(float)), 0, 0, 0},
                        pad);
            SetFlag<HardEvent::MTE2_V>(0);  // 1. the tile is in UB before the vector unit reads it
            WaitFlag<HardEvent::MTE2_V>(0);
            Abs(v, v, (int32_t)n);
            Add(acc, acc, v, (int32_t)n);  // acc += |x[o, k, j..]|
            SetFlag<HardEvent::V_MTE2>(0);  // 2. read before the next copy-in overwrites the tile
            WaitFlag<HardEvent::V_MTE2>(0);
        }
        Muls(acc, acc, 1.0f / (float)len, (int32_t)n);  // the mean
        SetFlag<HardEvent::V_MTE3>(0);  // 3. the result is in UB before it is copied out
        WaitFlag<HardEvent::V_MTE3>(0);
        DataCopyPad(outGm[p], acc, DataCopyExtParams{1, (uint32_t)(n * sizeof(float)), 0, 0, 0});
        SetFlag<HardEvent::MTE3_V>(0);  // 4. copied out before the next run overwrites `acc`
        WaitFlag<HardEvent::MTE3_V>(0);
        p += n;
    }
}
