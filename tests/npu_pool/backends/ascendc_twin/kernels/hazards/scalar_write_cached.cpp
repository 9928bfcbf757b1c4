// hazard: stale-cache
// Run on 4 blocks: each writes its value with GlobalTensor::SetValue (the core's data cache
// holds it), SyncAll, then block 0 reads every value with DataCopy. Without
// DataCacheCleanAndInvalid the values have not reached global memory. c[0..3] = 1, 2, 3, 4
// (one value per 64-byte line of the workspace); n[0] = 1: cleaned first.
using namespace AscendC;

extern "C" __global__ __aicore__ void kernel(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR workspace, GM_ADDR tiling)
{
    const bool sync = ReadTiling(tiling).n[0] != 0;
    const int32_t me = GetBlockIdx();
    GlobalTensor<float> cGm, wsGm;
    cGm.SetGlobalBuffer((__gm__ float*)c, 1024);
    wsGm.SetGlobalBuffer((__gm__ float*)GetUserWorkspace(workspace), 64);
    for (int32_t i = 0; i < 16; ++i) wsGm.SetValue(me * 16 + i, static_cast<float>(me + 1));
    if (sync) DataCacheCleanAndInvalid<float, CacheLine::SINGLE_CACHE_LINE, DcciDst::CACHELINE_OUT>(wsGm[me * 16]);
    SyncAll();
    if (me == 0) {
        TPipe pipe;
        TBuf<TPosition::VECCALC> xb, yb;
        pipe.InitBuffer(xb, 64 * sizeof(float));
        pipe.InitBuffer(yb, 8 * sizeof(float));
        LocalTensor<float> x = xb.Get<float>(), y = yb.Get<float>();
        DataCopy(x, wsGm, 64);  // HAZARD
        SetFlag<HardEvent::MTE2_S>(EVENT_ID0);
        WaitFlag<HardEvent::MTE2_S>(EVENT_ID0);
        for (int32_t i = 0; i < 8; ++i) y.SetValue(i, i < 4 ? x.GetValue(i * 16) : 0.0f);
        SetFlag<HardEvent::S_MTE3>(EVENT_ID0);
        WaitFlag<HardEvent::S_MTE3>(EVENT_ID0);
        DataCopy(cGm, y, 8);
    }
}
