// Every listed vector instruction in its mask/repeat form (contiguous mask of 64 floats,
// n[0] / 64 repeats); c holds one row of n[0] floats per instruction, in the test's order.
using namespace AscendC;

extern "C" __global__ __aicore__ void kernel(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR workspace, GM_ADDR tiling)
{
    TestTiling t = ReadTiling(tiling);
    const int32_t n = static_cast<int32_t>(t.n[0]);
    const uint32_t r = n / 64;
    GlobalTensor<float> aGm, bGm, cGm;
    aGm.SetGlobalBuffer((__gm__ float*)a, n);
    bGm.SetGlobalBuffer((__gm__ float*)b, n);
    cGm.SetGlobalBuffer((__gm__ float*)c, 16 * n);
    TPipe pipe;
    TBuf<TPosition::VECCALC> xb, yb, zb;
    pipe.InitBuffer(xb, n * sizeof(float));
    pipe.InitBuffer(yb, n * sizeof(float));
    pipe.InitBuffer(zb, n * sizeof(float));
    LocalTensor<float> x = xb.Get<float>(), y = yb.Get<float>(), z = zb.Get<float>();
    DataCopy(x, aGm, n);
    DataCopy(y, bGm, n);
    const BinaryRepeatParams bin(1, 1, 1, 8, 8, 8);
    const UnaryRepeatParams un(1, 1, 8, 8);
    int32_t row = 0;
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);  // the inputs are in UB before the vector unit reads them
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    auto out = [&]() {  // each result copied out before the next instruction overwrites it
        SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
        WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
        DataCopy(cGm[row++ * n], z, n);
        SetFlag<HardEvent::MTE3_V>(EVENT_ID0);
        WaitFlag<HardEvent::MTE3_V>(EVENT_ID0);
    };
    Sub(z, x, y, 64, r, bin); out();
    Mul(z, x, y, 64, r, bin); out();
    Div(z, x, y, 64, r, bin); out();
    Max(z, x, y, 64, r, bin); out();
    Min(z, x, y, 64, r, bin); out();
    Adds(z, x, 0.25f, 64, r, un); out();
    Muls(z, x, -3.0f, 64, r, un); out();
    Maxs(z, x, 0.1f, 64, r, un); out();
    Mins(z, x, 0.1f, 64, r, un); out();
    Exp(z, x, 64, r, un); out();
    Ln(z, y, 64, r, un); out();
    Abs(z, x, 64, r, un); out();
    Sqrt(z, y, 64, r, un); out();
    Rsqrt(z, y, 64, r, un); out();
    Reciprocal(z, y, 64, r, un); out();
    Relu(z, x, 64, r, un); out();
}
