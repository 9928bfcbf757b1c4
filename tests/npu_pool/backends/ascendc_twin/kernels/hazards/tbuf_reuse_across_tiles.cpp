// hazard: pipe-race
// One TBuf reused across tiles: the next tile's copy-in overwrites what the previous copy-out
// still reads unless MTE3 -> MTE2 is ordered (a write after read).
// c = 2 a over 4 tiles of 256 floats; n[0] = 1: synchronised.
using namespace AscendC;

extern "C" __global__ __aicore__ void kernel(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR workspace, GM_ADDR tiling)
{
    const bool sync = ReadTiling(tiling).n[0] != 0;
    GlobalTensor<float> aGm, cGm;
    aGm.SetGlobalBuffer((__gm__ float*)a, 1024);
    cGm.SetGlobalBuffer((__gm__ float*)c, 1024);
    TPipe pipe;
    TBuf<TPosition::VECCALC> xb;
    pipe.InitBuffer(xb, 256 * sizeof(float));
    LocalTensor<float> x = xb.Get<float>();
    for (int32_t tile = 0; tile < 4; ++tile) {
        DataCopy(x, aGm[tile * 256], 256);  // HAZARD
        SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
        WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
        Muls(x, x, 2.0f, 256);
        SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
        WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
        DataCopy(cGm[tile * 256], x, 256);
        if (sync) {
            SetFlag<HardEvent::MTE3_MTE2>(EVENT_ID0);
            WaitFlag<HardEvent::MTE3_MTE2>(EVENT_ID0);
        }
    }
}
