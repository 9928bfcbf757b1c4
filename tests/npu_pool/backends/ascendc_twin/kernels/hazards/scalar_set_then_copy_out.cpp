// hazard: pipe-race (without the compiler's automatic synchronisation)
// SetValue into UB, then a copy-out: S -> MTE3. CANN's default build (--cce-auto-sync) inserts
// this flag itself; a kernel built without it needs SetFlag<HardEvent::S_MTE3>.
// c[0..7] = 0, 1, ..., 7; n[0] = 1: synchronised.
using namespace AscendC;

extern "C" __global__ __aicore__ void kernel(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR workspace, GM_ADDR tiling)
{
    const bool sync = ReadTiling(tiling).n[0] != 0;
    GlobalTensor<float> cGm;
    cGm.SetGlobalBuffer((__gm__ float*)c, 1024);
    TPipe pipe;
    TBuf<TPosition::VECCALC> xb;
    pipe.InitBuffer(xb, 8 * sizeof(float));
    LocalTensor<float> x = xb.Get<float>();
    for (int32_t i = 0; i < 8; ++i) x.SetValue(i, static_cast<float>(i));
    if (sync) {
        SetFlag<HardEvent::S_MTE3>(EVENT_ID0);
        WaitFlag<HardEvent::S_MTE3>(EVENT_ID0);
    }
    DataCopy(cGm, x, 8);  // HAZARD
}
