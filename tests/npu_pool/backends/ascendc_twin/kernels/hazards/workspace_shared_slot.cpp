// hazard: block-overlap
// The workspace is checked like an output: two blocks writing the same bytes between two
// SyncAlls race. Run on 2 blocks; n[0] = 1: block 1 writes the slot only after a SyncAll.
// c[0..7] = a[8..15] (block 1's values, read by block 0 after the last SyncAll).
using namespace AscendC;

extern "C" __global__ __aicore__ void kernel(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR workspace, GM_ADDR tiling)
{
    const bool sync = ReadTiling(tiling).n[0] != 0;
    const int32_t me = GetBlockIdx();
    GlobalTensor<float> aGm, cGm, wsGm;
    aGm.SetGlobalBuffer((__gm__ float*)a, 1024);
    cGm.SetGlobalBuffer((__gm__ float*)c, 1024);
    wsGm.SetGlobalBuffer((__gm__ float*)GetUserWorkspace(workspace), 8);
    TPipe pipe;
    TBuf<TPosition::VECCALC> xb;
    pipe.InitBuffer(xb, 8 * sizeof(float));
    LocalTensor<float> x = xb.Get<float>();
    DataCopy(x, aGm[me * 8], 8);
    SetFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
    if (me == 0) DataCopy(wsGm, x, 8);
    if (sync) SyncAll();
    if (me == 1) DataCopy(wsGm, x, 8);  // HAZARD
    SyncAll();
    if (me == 0) {
        SetFlag<HardEvent::MTE3_MTE2>(EVENT_ID0);
        WaitFlag<HardEvent::MTE3_MTE2>(EVENT_ID0);
        DataCopy(x, wsGm, 8);
        SetFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
        WaitFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
        DataCopy(cGm, x, 8);
    }
}
