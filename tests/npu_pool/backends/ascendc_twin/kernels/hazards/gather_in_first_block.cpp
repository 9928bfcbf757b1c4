// hazard: block-race
// Run on 4 blocks: each puts its 8 floats of a into the workspace; block 0 gathers all four
// slots into c. Without SyncAll block 0 reads slots the others write later in the same
// interval: a race whichever block runs first. c[0..31] = a[0..31]; n[0] = 1: SyncAll first.
using namespace AscendC;

extern "C" __global__ __aicore__ void kernel(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR workspace, GM_ADDR tiling)
{
    const bool sync = ReadTiling(tiling).n[0] != 0;
    const int32_t me = GetBlockIdx();
    GlobalTensor<float> aGm, cGm, wsGm;
    aGm.SetGlobalBuffer((__gm__ float*)a, 1024);
    cGm.SetGlobalBuffer((__gm__ float*)c, 1024);
    wsGm.SetGlobalBuffer((__gm__ float*)GetUserWorkspace(workspace), 32);
    TPipe pipe;
    TBuf<TPosition::VECCALC> xb;
    pipe.InitBuffer(xb, 32 * sizeof(float));
    LocalTensor<float> x = xb.Get<float>();
    DataCopy(x, aGm[me * 8], 8);
    SetFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
    DataCopy(wsGm[me * 8], x, 8);  // HAZARD
    if (sync) SyncAll();
    if (me == 0) {
        SetFlag<HardEvent::MTE3_MTE2>(EVENT_ID0);
        WaitFlag<HardEvent::MTE3_MTE2>(EVENT_ID0);
        DataCopy(x, wsGm, 32);
        SetFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
        WaitFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
        DataCopy(cGm, x, 32);
    }
}
