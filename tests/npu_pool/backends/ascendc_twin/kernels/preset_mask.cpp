// The vector mask set outside the instruction: a bit mask in normal mode (even elements only),
// then counter mode over 200 elements (three whole repeats of 64 floats and a tail of 8).
using namespace AscendC;

extern "C" __global__ __aicore__ void kernel(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR workspace, GM_ADDR tiling)
{
    GlobalTensor<float> aGm, cGm;
    aGm.SetGlobalBuffer((__gm__ float*)a, 256);
    cGm.SetGlobalBuffer((__gm__ float*)c, 512);
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 512 * sizeof(float));
    LocalTensor<float> x = buf.Get<float>();
    LocalTensor<float> y = x[256];
    DataCopy(x, aGm, 256);
    SetVectorMask<float>(0, 0x5555555555555555ull);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    Muls<float, false>(x, x, 2.0f, MASK_PLACEHOLDER, 4, UnaryRepeatParams{1, 1, 8, 8});  // even elements doubled
    ResetMask();
    Duplicate(y, 0.0f, 256);
    SetMaskCount();
    SetVectorMask<float, MaskMode::COUNTER>(0, 200);
    Duplicate<float, false>(y, 7.0f, MASK_PLACEHOLDER, 1, 1, 8);  // repeatTimes 1, yet 200 elements
    SetMaskNorm();
    ResetMask();
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(cGm, x, 512);
}
