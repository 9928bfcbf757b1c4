// hazard: sync-double-set
// Two copy-ins, each followed by the same SetFlag<MTE2_V>(0), then two waits: a flag is one bit,
// so the second set is lost and the second wait hangs on a device (the twin used to count sets).
// c[0..511] = a[0..511] + a[512..1023]; n[0] = 1: the second copy-in has its own event id.
using namespace AscendC;

extern "C" __global__ __aicore__ void kernel(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR workspace, GM_ADDR tiling)
{
    const bool sync = ReadTiling(tiling).n[0] != 0;
    GlobalTensor<float> aGm, cGm;
    aGm.SetGlobalBuffer((__gm__ float*)a, 1024);
    cGm.SetGlobalBuffer((__gm__ float*)c, 1024);
    TPipe pipe;
    TBuf<TPosition::VECCALC> lb, hb;
    pipe.InitBuffer(lb, 512 * sizeof(float));
    pipe.InitBuffer(hb, 512 * sizeof(float));
    LocalTensor<float> low = lb.Get<float>(), high = hb.Get<float>();
    const int32_t second = sync ? EVENT_ID1 : EVENT_ID0;
    DataCopy(low, aGm, 512);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    DataCopy(high, aGm[512], 512);
    SetFlag<HardEvent::MTE2_V>(second);  // HAZARD
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(second);
    Add(low, low, high, 512);
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(cGm, low, 512);
}
