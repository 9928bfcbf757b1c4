// hazard: sync-order
// A WaitFlag on PIPE_S before its SetFlag stalls the scalar unit, which would issue that set:
// the device waits forever. n[0] = 1: the set comes first. c[0..7] = a[0].
using namespace AscendC;

extern "C" __global__ __aicore__ void kernel(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR workspace, GM_ADDR tiling)
{
    const bool sync = ReadTiling(tiling).n[0] != 0;
    GlobalTensor<float> aGm, cGm;
    aGm.SetGlobalBuffer((__gm__ float*)a, 1024);
    cGm.SetGlobalBuffer((__gm__ float*)c, 1024);
    TPipe pipe;
    TBuf<TPosition::VECCALC> xb, yb;
    pipe.InitBuffer(xb, 8 * sizeof(float));
    pipe.InitBuffer(yb, 8 * sizeof(float));
    LocalTensor<float> x = xb.Get<float>(), y = yb.Get<float>();
    if (!sync) WaitFlag<HardEvent::MTE2_S>(EVENT_ID0);  // HAZARD
    DataCopy(x, aGm, 8);
    SetFlag<HardEvent::MTE2_S>(EVENT_ID0);
    if (sync) WaitFlag<HardEvent::MTE2_S>(EVENT_ID0);
    const float first = x.GetValue(0);
    for (int32_t i = 0; i < 8; ++i) y.SetValue(i, first);
    SetFlag<HardEvent::S_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::S_MTE3>(EVENT_ID0);
    DataCopy(cGm, y, 8);
}
