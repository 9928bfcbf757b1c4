// b = half(a) and c = int32(a) with RoundMode n[1] (0 NONE, 1 RINT, 2 FLOOR, 3 CEIL, 4 ROUND,
// 5 TRUNC, 6 ODD; ODD only for half); n[0] a multiple of 16.
using namespace AscendC;

extern "C" __global__ __aicore__ void kernel(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR workspace, GM_ADDR tiling)
{
    TestTiling t = ReadTiling(tiling);
    const int32_t n = static_cast<int32_t>(t.n[0]);
    const RoundMode mode = static_cast<RoundMode>(t.n[1]);
    GlobalTensor<float> aGm;
    GlobalTensor<half> hGm;
    GlobalTensor<int32_t> iGm;
    aGm.SetGlobalBuffer((__gm__ float*)a, n);
    hGm.SetGlobalBuffer((__gm__ half*)b, n);
    iGm.SetGlobalBuffer((__gm__ int32_t*)c, n);
    TPipe pipe;
    TBuf<TPosition::VECCALC> xb, hb, ib;
    pipe.InitBuffer(xb, n * sizeof(float));
    pipe.InitBuffer(hb, n * sizeof(half));
    pipe.InitBuffer(ib, n * sizeof(int32_t));
    LocalTensor<float> x = xb.Get<float>();
    LocalTensor<half> h = hb.Get<half>();
    LocalTensor<int32_t> i = ib.Get<int32_t>();
    DataCopy(x, aGm, n);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    Cast(h, x, mode, n);
    Cast(i, x, mode == RoundMode::CAST_ODD ? RoundMode::CAST_RINT : mode, n);
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(hGm, h, n);
    DataCopy(iGm, i, n);
}
