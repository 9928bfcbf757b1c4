// expect-fault: block-race
// block 1 reads what block 0 wrote to the output (no order between blocks on a device)
using namespace AscendC;

extern "C" __global__ __aicore__ void kernel(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR workspace, GM_ADDR tiling)
{
    GlobalTensor<float> aGm, cGm;
    aGm.SetGlobalBuffer((__gm__ float*)a, 1024);
    cGm.SetGlobalBuffer((__gm__ float*)c, 1024);
    TPipe pipe;
    TBuf<TPosition::VECCALC> xb;
    pipe.InitBuffer(xb, 64 * sizeof(float));
    LocalTensor<float> x = xb.Get<float>();
    if (GetBlockIdx() == 0) {
        DataCopy(x, aGm, 64);
        SetFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
        WaitFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
        DataCopy(cGm, x, 64);
    } else {
        DataCopy(x, cGm, 64);  // FAULT
        DataCopy(cGm[64 * GetBlockIdx()], x, 64);
    }
}
