// half arithmetic on the vector unit: c = bf16(a * b + a) where a, b are half inputs; the
// product and sum are rounded to half each (two instructions), then cast through float to
// bfloat16. n[0] a multiple of 16.
using namespace AscendC;

extern "C" __global__ __aicore__ void kernel(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR workspace, GM_ADDR tiling)
{
    TestTiling t = ReadTiling(tiling);
    const int32_t n = static_cast<int32_t>(t.n[0]);
    GlobalTensor<half> aGm, bGm;
    GlobalTensor<bfloat16_t> cGm;
    aGm.SetGlobalBuffer((__gm__ half*)a, n);
    bGm.SetGlobalBuffer((__gm__ half*)b, n);
    cGm.SetGlobalBuffer((__gm__ bfloat16_t*)c, n);
    TPipe pipe;
    TBuf<TPosition::VECCALC> xb, yb, fb, ob;
    pipe.InitBuffer(xb, n * sizeof(half));
    pipe.InitBuffer(yb, n * sizeof(half));
    pipe.InitBuffer(fb, n * sizeof(float));
    pipe.InitBuffer(ob, n * sizeof(bfloat16_t));
    LocalTensor<half> x = xb.Get<half>(), y = yb.Get<half>();
    LocalTensor<float> f = fb.Get<float>();
    LocalTensor<bfloat16_t> o = ob.Get<bfloat16_t>();
    DataCopy(x, aGm, n);
    DataCopy(y, bGm, n);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    Mul(y, x, y, n);
    Add(y, y, x, n);
    Cast(f, y, RoundMode::CAST_NONE, n);
    Cast(o, f, RoundMode::CAST_RINT, n);
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(cGm, o, n);
}
