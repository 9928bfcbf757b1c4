// Compare, CompareScalar, Select and Duplicate in the mask/repeat form (64 floats per repeat);
// n[0] a multiple of 64, c holds 5 * n[0] floats:
//   c[0n] = max(a, b)                    Compare GT (contiguous mask), Select tensor/tensor
//   c[1n] = a > b ? a : 0.5              Select tensor/scalar with a bit mask
//   c[2n] = repeat 0's bits for every repeat: VSEL_CMPMASK_SPR
//   c[3n] = first 32 of each repeat b >= 0 ? a : b, the rest 7 (the mask keeps dst)
//   c[4n] = a[i] < b[i % 64] ? a : 0     Compare with src1's repeat stride 0
using namespace AscendC;

extern "C" __global__ __aicore__ void kernel(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR workspace, GM_ADDR tiling)
{
    TestTiling t = ReadTiling(tiling);
    const int32_t n = static_cast<int32_t>(t.n[0]);
    const uint32_t repeats = n / 64;
    GlobalTensor<float> aGm, bGm, cGm;
    aGm.SetGlobalBuffer((__gm__ float*)a, n);
    bGm.SetGlobalBuffer((__gm__ float*)b, n);
    cGm.SetGlobalBuffer((__gm__ float*)c, 5 * n);
    TPipe pipe;
    TBuf<TPosition::VECCALC> xb, yb, zb, mb;
    pipe.InitBuffer(xb, n * sizeof(float));
    pipe.InitBuffer(yb, n * sizeof(float));
    pipe.InitBuffer(zb, n * sizeof(float));
    pipe.InitBuffer(mb, n / 8);
    LocalTensor<float> x = xb.Get<float>(), y = yb.Get<float>(), z = zb.Get<float>();
    LocalTensor<uint8_t> bits = mb.Get<uint8_t>();
    DataCopy(x, aGm, n);
    DataCopy(y, bGm, n);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);  // the inputs are in UB before the vector unit reads them
    const BinaryRepeatParams dense(1, 1, 1, 8, 8, 8);
    uint64_t all[2] = {~0ull, 0};

    Compare(bits, x, y, CMPMODE::GT, 64, repeats, dense);
    Select(z, bits, x, y, SELMODE::VSEL_TENSOR_TENSOR_MODE, 64, repeats, dense);
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);  // the result is complete before it is copied out
    DataCopy(cGm, z, n);
    SetFlag<HardEvent::MTE3_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE3_V>(EVENT_ID0);  // copied out before the vector unit overwrites it
    Select(z, bits, x, 0.5f, SELMODE::VSEL_TENSOR_SCALAR_MODE, all, repeats, dense);
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);  // the result is complete before it is copied out
    DataCopy(cGm[n], z, n);
    SetFlag<HardEvent::MTE3_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE3_V>(EVENT_ID0);  // copied out before the vector unit overwrites it
    Select(z, bits, x, y, SELMODE::VSEL_CMPMASK_SPR, 64, repeats, dense);
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);  // the result is complete before it is copied out
    DataCopy(cGm[2 * n], z, n);
    SetFlag<HardEvent::MTE3_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE3_V>(EVENT_ID0);  // copied out before the vector unit overwrites it

    CompareScalar(bits, y, 0.0f, CMPMODE::GE, all, repeats, UnaryRepeatParams(1, 1, 8, 8));
    Duplicate(z, 7.0f, all, repeats, 1, 8);
    Select(z, bits, x, y, SELMODE::VSEL_TENSOR_TENSOR_MODE, 32, repeats, dense);
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);  // the result is complete before it is copied out
    DataCopy(cGm[3 * n], z, n);
    SetFlag<HardEvent::MTE3_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE3_V>(EVENT_ID0);  // copied out before the vector unit overwrites it

    Compare(bits, x, y, CMPMODE::LT, all, repeats, BinaryRepeatParams(1, 1, 1, 8, 8, 0));
    Select(z, bits, x, 0.0f, SELMODE::VSEL_TENSOR_SCALAR_MODE, 64, repeats, dense);
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);  // the result is complete before it is copied out
    DataCopy(cGm[4 * n], z, n);
}
