// rung: vector
// task: ex7_Conv1dStride2
// summary: vector rung, conv family: ex7_Conv1dStride2, each output line (batch, out channel) accumulated in UB: per input channel and tap a DataCopyPad from that tap's offset, GatherMask's even elements (stride 2), Axpy by the weight; flag pairs between the pipes
using namespace AscendC;
constexpr int64_t STRIDE = 2;    // the reference's stride (no padding): GatherMask pattern 1 keeps every second (even) element
constexpr int64_t MAX_L = 8192;  // floats of one input line in UB (this task's lines: x_d2)
constexpr int64_t MAX_W = 4096;  // floats of one output channel's weights in UB (in_channels * kernel_size)

extern "C" __global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR conv_weight, GM_ADDR out, GM_ADDR workspace,
                                             GM_ADDR tiling)
{
    KernelTiling t;
    CopyTiling(&t, tiling);
    const int64_t B = t.x_d0, C = t.x_d1, L = t.x_d2, OC = t.out_d1, OL = t.out_d2, KS = t.conv_weight_d2;
    const int64_t lines = B * OC;  // an output line: one (batch, out channel), OL long
    const int64_t per = (lines + GetBlockNum() - 1) / GetBlockNum();  // whole output lines per block
    const int64_t first = per * GetBlockIdx();
    const int64_t last = first + per < lines ? first + per : lines;  // the last block's lines end at the tail
    GlobalTensor<float> xGm, wGm, outGm;
    xGm.SetGlobalBuffer((__gm__ float*)x, B * C * L);
    wGm.SetGlobalBuffer((__gm__ float*)conv_weight, OC * C * KS);  // weight is [OC, C, KS]
    outGm.SetGlobalBuffer((__gm__ float*)out, lines * OL);
    TPipe pipe;
    TBuf<TPosition::VECCALC> rawBuf, pickBuf, accBuf, wBuf;
    pipe.InitBuffer(rawBuf, MAX_L * sizeof(float));
    pipe.InitBuffer(pickBuf, MAX_L / STRIDE * sizeof(float));
    pipe.InitBuffer(accBuf, MAX_L / STRIDE * sizeof(float));
    pipe.InitBuffer(wBuf, MAX_W * sizeof(float));
    LocalTensor<float> raw = rawBuf.Get<float>(), pick = pickBuf.Get<float>(), acc = accBuf.Get<float>();
    LocalTensor<float> w = wBuf.Get<float>();
    const int64_t n = STRIDE * (OL - 1) + 1;  // elements from a tap's offset to the last output's
    DataCopyExtParams in{1, (uint32_t)(n * sizeof(float)), 0, 0, 0};
    DataCopyPadExtParams<float> pad{false, 0, 0, 0.0f};
    for (int64_t line = first; line < last; ++line) {
        const int64_t b = line / OC, oc = line % OC;
        DataCopyPad(w, wGm[oc * C * KS], DataCopyExtParams{1, (uint32_t)(C * KS * sizeof(float)), 0, 0, 0}, pad);
        SetFlag<HardEvent::MTE2_S>(0);  // 1. the weights are in UB before the scalar unit reads them
        WaitFlag<HardEvent::MTE2_S>(0);
        Duplicate(acc, 0.0f, (int32_t)OL);
        for (int64_t ic = 0; ic < C; ++ic) {
            for (int64_t k = 0; k < KS; ++k) {  // tap k: out[o] takes x[ic, o * STRIDE + k]
                DataCopyPad(raw, xGm[(b * C + ic) * L + k], in, pad);
                SetFlag<HardEvent::MTE2_V>(0);  // 2. the line is in UB before the vector unit reads it
                WaitFlag<HardEvent::MTE2_V>(0);
                uint64_t kept = 0;  // GatherMask counts what it packed: OL elements
                GatherMask(pick, raw, (uint8_t)1, true, (uint32_t)n, GatherMaskParams{1, 1, 8, 0}, kept);
                Axpy(acc, pick, w.GetValue(ic * KS + k), (int32_t)OL);  // acc += weight * x
                SetFlag<HardEvent::V_MTE2>(0);  // 3. read before the next copy-in overwrites `raw`
                WaitFlag<HardEvent::V_MTE2>(0);
            }
        }
        SetFlag<HardEvent::S_MTE2>(0);  // 4. the weights are read before the next line's copy-in overwrites them
        WaitFlag<HardEvent::S_MTE2>(0);
        SetFlag<HardEvent::V_MTE3>(0);  // 5. the result is in UB before it is copied out
        WaitFlag<HardEvent::V_MTE3>(0);
        DataCopyPad(outGm[line * OL], acc, DataCopyExtParams{1, (uint32_t)(OL * sizeof(float)), 0, 0, 0});
        SetFlag<HardEvent::MTE3_V>(0);  // 6. copied out before the next line's result overwrites `acc`
        WaitFlag<HardEvent::MTE3_V>(0);
    }
}
