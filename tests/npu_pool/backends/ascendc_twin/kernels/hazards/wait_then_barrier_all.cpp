// hazard: sync-order
// PipeBarrier<PIPE_ALL> waits for every pipe; with PIPE_V held by a WaitFlag whose SetFlag comes
// only after the barrier, the device waits forever. n[0] = 1: the set before the barrier. c = 2 a.
using namespace AscendC;

extern "C" __global__ __aicore__ void kernel(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR workspace, GM_ADDR tiling)
{
    const bool sync = ReadTiling(tiling).n[0] != 0;
    GlobalTensor<float> aGm, cGm;
    aGm.SetGlobalBuffer((__gm__ float*)a, 1024);
    cGm.SetGlobalBuffer((__gm__ float*)c, 1024);
    TPipe pipe;
    TBuf<TPosition::VECCALC> xb;
    pipe.InitBuffer(xb, 1024 * sizeof(float));
    LocalTensor<float> x = xb.Get<float>();
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    DataCopy(x, aGm, 1024);
    if (sync) SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    PipeBarrier<PIPE_ALL>();  // HAZARD
    if (!sync) SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    Muls(x, x, 2.0f, 1024);
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(cGm, x, 1024);
}
