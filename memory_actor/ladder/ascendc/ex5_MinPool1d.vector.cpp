// rung: vector
// task: ex5_MinPool1d
// summary: vector rung, pooling/window family: ex5_MinPool1d, each (batch, channel) line through UB: per window offset a DataCopyPad from that offset, GatherMask's even elements (stride 2), Min into the result, DataCopyPad out; flag pairs between the pipes
using namespace AscendC;
constexpr int64_t WINDOW = 4;   // the reference's kernel_size
constexpr int64_t STRIDE = 2;   // the reference's stride: GatherMask pattern 1 keeps every second (even) element
constexpr int64_t MAX_L = 8192;  // floats of one line in UB (this task's lines: x_d2)

extern "C" __global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR out, GM_ADDR workspace, GM_ADDR tiling)
{
    KernelTiling t;
    CopyTiling(&t, tiling);
    const int64_t lines = t.x_d0 * t.x_d1, L = t.x_d2, OL = t.out_d2;  // a line: one (batch, channel)
    const int64_t per = (lines + GetBlockNum() - 1) / GetBlockNum();  // whole lines per block
    const int64_t first = per * GetBlockIdx();
    const int64_t last = first + per < lines ? first + per : lines;  // the last block's lines end at the tail
    GlobalTensor<float> xGm, outGm;
    xGm.SetGlobalBuffer((__gm__ float*)x, lines * L);
    outGm.SetGlobalBuffer((__gm__ float*)out, lines * OL);
    TPipe pipe;
    TBuf<TPosition::VECCALC> rawBuf, pickBuf, accBuf;
    pipe.InitBuffer(rawBuf, MAX_L * sizeof(float));
    pipe.InitBuffer(pickBuf, MAX_L / STRIDE * sizeof(float));
    pipe.InitBuffer(accBuf, MAX_L / STRIDE * sizeof(float));
    LocalTensor<float> raw = rawBuf.Get<float>(), pick = pickBuf.Get<float>(), acc = accBuf.Get<float>();
    const int64_t n = STRIDE * (OL - 1) + 1;  // elements from a window offset to the last window's
    DataCopyExtParams in{1, (uint32_t)(n * sizeof(float)), 0, 0, 0};
    for (int64_t line = first; line < last; ++line) {
        for (int64_t k = 0; k < WINDOW; ++k) {  // window offset k: out[o] takes x[o * STRIDE + k]
            DataCopyPad(raw, xGm[line * L + k], in, DataCopyPadExtParams<float>{false, 0, 0, 0.0f});
            SetFlag<HardEvent::MTE2_V>(0);  // 1. the line is in UB before the vector unit reads it
            WaitFlag<HardEvent::MTE2_V>(0);
            uint64_t kept = 0;  // GatherMask counts what it packed: OL elements
            GatherMask(k == 0 ? acc : pick, raw, (uint8_t)1, true, (uint32_t)n, GatherMaskParams{1, 1, 8, 0}, kept);
            if (k > 0) {
                Min(acc, acc, pick, (int32_t)OL);  // the window's minimum so far
            }
            SetFlag<HardEvent::V_MTE2>(0);  // 2. read before the next copy-in overwrites `raw`
            WaitFlag<HardEvent::V_MTE2>(0);
        }
        SetFlag<HardEvent::V_MTE3>(0);  // 3. the result is in UB before it is copied out
        WaitFlag<HardEvent::V_MTE3>(0);
        DataCopyPad(outGm[line * OL], acc, DataCopyExtParams{1, (uint32_t)(OL * sizeof(float)), 0, 0, 0});
        SetFlag<HardEvent::MTE3_V>(0);  // 4. copied out before the next line's result overwrites `acc`
        WaitFlag<HardEvent::MTE3_V>(0);
    }
}
