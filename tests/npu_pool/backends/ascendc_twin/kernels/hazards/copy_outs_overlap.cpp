// hazard: pipe-race
// Two copy-outs of one block to the same global bytes (a running result written twice): the
// transfers of PIPE_MTE3 may overlap, so the first can land last without
// PipeBarrier<PIPE_MTE3>. c[0..255] = 2 a (the second write); n[0] = 1: synchronised.
using namespace AscendC;

extern "C" __global__ __aicore__ void kernel(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR workspace, GM_ADDR tiling)
{
    const bool sync = ReadTiling(tiling).n[0] != 0;
    GlobalTensor<float> aGm, cGm;
    aGm.SetGlobalBuffer((__gm__ float*)a, 1024);
    cGm.SetGlobalBuffer((__gm__ float*)c, 1024);
    TPipe pipe;
    TBuf<TPosition::VECCALC> xb, yb;
    pipe.InitBuffer(xb, 256 * sizeof(float));
    pipe.InitBuffer(yb, 256 * sizeof(float));
    LocalTensor<float> x = xb.Get<float>(), y = yb.Get<float>();
    DataCopy(x, aGm, 256);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    Muls(y, x, 2.0f, 256);
    SetFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
    DataCopy(cGm, x, 256);
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    if (sync) PipeBarrier<PIPE_MTE3>();
    DataCopy(cGm, y, 256);  // HAZARD
}
