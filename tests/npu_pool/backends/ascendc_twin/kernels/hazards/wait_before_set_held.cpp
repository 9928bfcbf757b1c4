// hazard: sync-order
// A WaitFlag issued before the copy and the SetFlag it waits for is legal: it holds PIPE_V's
// queue only, and the scalar unit goes on to issue the copy and the set (n[0] = 1, accepted).
// A vector op issued before that set would run on the device only after it, out of the
// kernel's order, which the twin refuses. c = 2 a.
using namespace AscendC;

extern "C" __global__ __aicore__ void kernel(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR workspace, GM_ADDR tiling)
{
    const bool sync = ReadTiling(tiling).n[0] != 0;
    GlobalTensor<float> aGm, cGm;
    aGm.SetGlobalBuffer((__gm__ float*)a, 1024);
    cGm.SetGlobalBuffer((__gm__ float*)c, 1024);
    TPipe pipe;
    TBuf<TPosition::VECCALC> xb, yb;
    pipe.InitBuffer(xb, 1024 * sizeof(float));
    pipe.InitBuffer(yb, 1024 * sizeof(float));
    LocalTensor<float> x = xb.Get<float>(), y = yb.Get<float>();
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);  // before the copy it follows
    DataCopy(x, aGm, 1024);
    if (sync) SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    Muls(y, x, 2.0f, 1024);  // HAZARD
    if (!sync) SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(cGm, y, 1024);
}
