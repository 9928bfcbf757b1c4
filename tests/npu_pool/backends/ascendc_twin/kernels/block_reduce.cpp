// Rows of 8 floats (one 32-byte block each): b[r] = BlockReduceSum, c[r] = BlockReduceMax;
// one block, n[0] rows (a multiple of 8, at most 8 * 255; 8 rows per repeat).
using namespace AscendC;

extern "C" __global__ __aicore__ void kernel(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR workspace, GM_ADDR tiling)
{
    TestTiling t = ReadTiling(tiling);
    const int32_t rows = static_cast<int32_t>(t.n[0]);
    GlobalTensor<float> aGm, sumGm, maxGm;
    aGm.SetGlobalBuffer((__gm__ float*)a, rows * 8);
    sumGm.SetGlobalBuffer((__gm__ float*)b, rows);
    maxGm.SetGlobalBuffer((__gm__ float*)c, rows);
    TPipe pipe;
    TBuf<TPosition::VECCALC> xb, sb, mb;
    pipe.InitBuffer(xb, rows * 8 * sizeof(float));
    pipe.InitBuffer(sb, rows * sizeof(float));
    pipe.InitBuffer(mb, rows * sizeof(float));
    LocalTensor<float> x = xb.Get<float>(), s = sb.Get<float>(), m = mb.Get<float>();
    DataCopy(x, aGm, rows * 8);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    BlockReduceSum(s, x, rows / 8, 64, 1, 1, 8);
    BlockReduceMax(m, x, rows / 8, 64, 1, 1, 8);
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(sumGm, s, rows);
    DataCopy(maxGm, m, rows);
}
