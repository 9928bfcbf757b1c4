// hazard: block-race
// As gather_in_first_block.cpp, but the last block gathers: the twin runs blocks in order, so
// it sees every write, yet on a device the blocks run at once. c[0..31] = a[0..31];
// n[0] = 1: SyncAll first.
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
    DataCopy(wsGm[me * 8], x, 8);
    if (sync) SyncAll();
    if (me == GetBlockNum() - 1) {
        SetFlag<HardEvent::MTE3_MTE2>(EVENT_ID0);
        WaitFlag<HardEvent::MTE3_MTE2>(EVENT_ID0);
        DataCopy(x, wsGm, 32);  // HAZARD
        SetFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
        WaitFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
        DataCopy(cGm, x, 32);
    }
}
