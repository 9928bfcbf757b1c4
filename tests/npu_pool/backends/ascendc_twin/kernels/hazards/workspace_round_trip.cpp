// hazard: pipe-race
// One block writes a tile to the workspace (MTE3) and reads it back (MTE2): global memory
// written by one pipe and read by another needs MTE3 -> MTE2. c = a + 1 over 256 floats;
// n[0] = 1: synchronised.
using namespace AscendC;

extern "C" __global__ __aicore__ void kernel(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR workspace, GM_ADDR tiling)
{
    const bool sync = ReadTiling(tiling).n[0] != 0;
    GlobalTensor<float> aGm, cGm, wsGm;
    aGm.SetGlobalBuffer((__gm__ float*)a, 1024);
    cGm.SetGlobalBuffer((__gm__ float*)c, 1024);
    wsGm.SetGlobalBuffer((__gm__ float*)GetUserWorkspace(workspace), 256);
    TPipe pipe;
    TBuf<TPosition::VECCALC> xb, yb;
    pipe.InitBuffer(xb, 256 * sizeof(float));
    pipe.InitBuffer(yb, 256 * sizeof(float));
    LocalTensor<float> x = xb.Get<float>(), y = yb.Get<float>();
    DataCopy(x, aGm, 256);
    SetFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
    DataCopy(wsGm, x, 256);
    if (sync) {
        SetFlag<HardEvent::MTE3_MTE2>(EVENT_ID0);
        WaitFlag<HardEvent::MTE3_MTE2>(EVENT_ID0);
    }
    DataCopy(y, wsGm, 256);  // HAZARD
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    Adds(y, y, 1.0f, 256);
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(cGm, y, 256);
}
