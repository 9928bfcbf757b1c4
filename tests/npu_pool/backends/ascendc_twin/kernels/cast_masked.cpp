// Cast's mask/repeat form: b = half(a) for n[0] floats (a multiple of 64), dense: 64 elements
// per repeat, source repeat stride 8 blocks, destination 4; then c = float(b) in the count form.
using namespace AscendC;

extern "C" __global__ __aicore__ void kernel(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR workspace, GM_ADDR tiling)
{
    TestTiling t = ReadTiling(tiling);
    const int32_t n = static_cast<int32_t>(t.n[0]);
    GlobalTensor<float> aGm, cGm;
    GlobalTensor<half> hGm;
    aGm.SetGlobalBuffer((__gm__ float*)a, n);
    hGm.SetGlobalBuffer((__gm__ half*)b, n);
    cGm.SetGlobalBuffer((__gm__ float*)c, n);
    TPipe pipe;
    TBuf<TPosition::VECCALC> xb, hb;
    pipe.InitBuffer(xb, n * sizeof(float));
    pipe.InitBuffer(hb, n * sizeof(half));
    LocalTensor<float> x = xb.Get<float>();
    LocalTensor<half> h = hb.Get<half>();
    DataCopy(x, aGm, n);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    Cast(h, x, RoundMode::CAST_RINT, 64, n / 64, {1, 1, 4, 8});
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(hGm, h, n);
    Cast(x, h, RoundMode::CAST_NONE, n);
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(cGm, x, n);
}
