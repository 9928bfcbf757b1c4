// c = a > b ? a : 0 with Compare (bit mask) and Select (tensor/scalar); n[0] a multiple of 64.
using namespace AscendC;

extern "C" __global__ __aicore__ void kernel(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR workspace, GM_ADDR tiling)
{
    TestTiling t = ReadTiling(tiling);
    const int32_t n = static_cast<int32_t>(t.n[0]);
    GlobalTensor<float> aGm, bGm, cGm;
    aGm.SetGlobalBuffer((__gm__ float*)a, n);
    bGm.SetGlobalBuffer((__gm__ float*)b, n);
    cGm.SetGlobalBuffer((__gm__ float*)c, n);
    TPipe pipe;
    TBuf<TPosition::VECCALC> xb, yb, mb;
    pipe.InitBuffer(xb, n * sizeof(float));
    pipe.InitBuffer(yb, n * sizeof(float));
    pipe.InitBuffer(mb, n / 8);
    LocalTensor<float> x = xb.Get<float>(), y = yb.Get<float>();
    LocalTensor<uint8_t> mask = mb.Get<uint8_t>();
    DataCopy(x, aGm, n);
    DataCopy(y, bGm, n);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    Compare(mask, x, y, CMPMODE::GT, n);
    Select(y, mask, x, 0.0f, SELMODE::VSEL_TENSOR_SCALAR_MODE, n);
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(cGm, y, n);
}
