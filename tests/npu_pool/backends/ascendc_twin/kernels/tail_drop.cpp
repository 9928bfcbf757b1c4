// A real bug the twin keeps: DataCopy of n[0] floats when n[0] * 4 is not a multiple of 32
// copies only whole 32-byte blocks; the tail of c is never written (not a fault: silent). The
// buffer is cleared first, so the vector op reads only written UB (else: uninit-read).
using namespace AscendC;

extern "C" __global__ __aicore__ void kernel(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR workspace, GM_ADDR tiling)
{
    TestTiling t = ReadTiling(tiling);
    const int32_t n = static_cast<int32_t>(t.n[0]);
    GlobalTensor<float> aGm, cGm;
    aGm.SetGlobalBuffer((__gm__ float*)a, n);
    cGm.SetGlobalBuffer((__gm__ float*)c, n);
    TPipe pipe;
    TBuf<TPosition::VECCALC> xb;
    pipe.InitBuffer(xb, 256);
    LocalTensor<float> x = xb.Get<float>();
    Duplicate(x, 0.0f, 64);
    SetFlag<HardEvent::V_MTE2>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE2>(EVENT_ID0);
    DataCopy(x, aGm, n);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    Muls(x, x, 3.0f, n);
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(cGm, x, n);
}
