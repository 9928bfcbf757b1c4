// hazard: sync-unpaired
// A SetFlag with no WaitFlag before the kernel ends (msSanitizer synccheck: unpaired set_flag).
// c = 2 a; n[0] = 1: the flag is waited for.
using namespace AscendC;

extern "C" __global__ __aicore__ void kernel(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR workspace, GM_ADDR tiling)
{
    const bool sync = ReadTiling(tiling).n[0] != 0;
    GlobalTensor<float> aGm, cGm;
    aGm.SetGlobalBuffer((__gm__ float*)a, 1024);
    cGm.SetGlobalBuffer((__gm__ float*)c, 1024);
    TPipe pipe;
    TQue<TPosition::VECIN, 1> inQ;
    TQue<TPosition::VECOUT, 1> outQ;
    pipe.InitBuffer(inQ, 1, 1024 * sizeof(float));
    pipe.InitBuffer(outQ, 1, 1024 * sizeof(float));
    LocalTensor<float> x = inQ.AllocTensor<float>();
    DataCopy(x, aGm, 1024);
    inQ.EnQue(x);
    x = inQ.DeQue<float>();
    LocalTensor<float> y = outQ.AllocTensor<float>();
    Muls(y, x, 2.0f, 1024);
    outQ.EnQue(y);
    inQ.FreeTensor(x);
    y = outQ.DeQue<float>();
    DataCopy(cGm, y, 1024);
    SetFlag<HardEvent::MTE3_MTE2>(EVENT_ID1);  // HAZARD
    if (sync) WaitFlag<HardEvent::MTE3_MTE2>(EVENT_ID1);
    outQ.FreeTensor(y);
}
