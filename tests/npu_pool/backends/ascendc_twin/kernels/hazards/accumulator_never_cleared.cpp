// hazard: uninit-read
// An accumulator read before anything wrote it (no Duplicate(acc, 0)): on a device it holds
// what an earlier kernel left in UB. c[0..255] = the sum of a's four 256-float tiles;
// n[0] = 1: the accumulator is cleared first.
using namespace AscendC;

extern "C" __global__ __aicore__ void kernel(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR workspace, GM_ADDR tiling)
{
    const bool sync = ReadTiling(tiling).n[0] != 0;
    GlobalTensor<float> aGm, cGm;
    aGm.SetGlobalBuffer((__gm__ float*)a, 1024);
    cGm.SetGlobalBuffer((__gm__ float*)c, 1024);
    TPipe pipe;
    TQue<TPosition::VECIN, 2> inQ;
    TBuf<TPosition::VECCALC> accBuf;
    pipe.InitBuffer(inQ, 2, 256 * sizeof(float));
    pipe.InitBuffer(accBuf, 256 * sizeof(float));
    LocalTensor<float> acc = accBuf.Get<float>();
    if (sync) Duplicate(acc, 0.0f, 256);
    for (int32_t tile = 0; tile < 4; ++tile) {
        LocalTensor<float> x = inQ.AllocTensor<float>();
        DataCopy(x, aGm[tile * 256], 256);
        inQ.EnQue(x);
        x = inQ.DeQue<float>();
        Add(acc, acc, x, 256);  // HAZARD
        inQ.FreeTensor(x);
    }
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(cGm, acc, 256);
}
