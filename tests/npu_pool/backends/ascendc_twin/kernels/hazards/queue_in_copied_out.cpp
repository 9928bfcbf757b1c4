// hazard: pipe-race
// A VECIN queue orders MTE2 -> V (its EnQue/DeQue flag is MTE2_V); copying the dequeued tensor
// straight out is MTE2 -> MTE3, which it does not order (TQueBind<VECIN, VECOUT> would).
// c = a; n[0] = 1: synchronised with SetFlag<HardEvent::MTE2_MTE3>.
using namespace AscendC;

extern "C" __global__ __aicore__ void kernel(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR workspace, GM_ADDR tiling)
{
    const bool sync = ReadTiling(tiling).n[0] != 0;
    GlobalTensor<float> aGm, cGm;
    aGm.SetGlobalBuffer((__gm__ float*)a, 1024);
    cGm.SetGlobalBuffer((__gm__ float*)c, 1024);
    TPipe pipe;
    TQue<TPosition::VECIN, 1> inQ;
    pipe.InitBuffer(inQ, 1, 1024 * sizeof(float));
    LocalTensor<float> x = inQ.AllocTensor<float>();
    DataCopy(x, aGm, 1024);
    inQ.EnQue(x);
    x = inQ.DeQue<float>();
    if (sync) {
        SetFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
        WaitFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
    }
    DataCopy(cGm, x, 1024);  // HAZARD
    inQ.FreeTensor(x);
}
