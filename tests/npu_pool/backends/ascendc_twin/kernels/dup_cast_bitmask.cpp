// Duplicate and Cast in their bit-mask form; n[0] a multiple of 64, c holds 2 * n[0] floats:
//   c[0n] = even elements 1.5, odd elements a          Duplicate with mask {0x5555..., 0}
//   c[1n] = float(half(a)) for the first 16 of every 64, the rest -1
//           Cast float -> half -> float, mask {0xFFFF, 0}, half repeat stride 4 blocks
using namespace AscendC;

extern "C" __global__ __aicore__ void kernel(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR workspace, GM_ADDR tiling)
{
    TestTiling t = ReadTiling(tiling);
    const int32_t n = static_cast<int32_t>(t.n[0]);
    const uint32_t repeats = n / 64;
    GlobalTensor<float> aGm, cGm;
    aGm.SetGlobalBuffer((__gm__ float*)a, n);
    cGm.SetGlobalBuffer((__gm__ float*)c, 2 * n);
    TPipe pipe;
    TBuf<TPosition::VECCALC> xb, yb, hb;
    pipe.InitBuffer(xb, n * sizeof(float));
    pipe.InitBuffer(yb, n * sizeof(float));
    pipe.InitBuffer(hb, n * sizeof(half));
    LocalTensor<float> x = xb.Get<float>(), y = yb.Get<float>();
    LocalTensor<half> h = hb.Get<half>();
    DataCopy(x, aGm, n);
    DataCopy(y, aGm, n);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);  // the inputs are in UB before the vector unit reads them
    uint64_t even[2] = {0x5555555555555555ull, 0};
    Duplicate(y, 1.5f, even, repeats, 1, 8);
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);  // the result is complete before it is copied out
    DataCopy(cGm, y, n);
    SetFlag<HardEvent::MTE3_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE3_V>(EVENT_ID0);  // copied out before the vector unit overwrites it

    uint64_t first16[2] = {0xFFFFull, 0};
    Duplicate(y, -1.0f, n);
    Cast(h, x, RoundMode::CAST_RINT, first16, repeats, UnaryRepeatParams(1, 1, 4, 8));
    Cast(y, h, RoundMode::CAST_NONE, first16, repeats, UnaryRepeatParams(1, 1, 8, 4));
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);  // the result is complete before it is copied out
    DataCopy(cGm[n], y, n);
}
