// Rows of exactly 64 floats (one repeat each): b[r] = WholeReduceSum, c[r] = WholeReduceMax
// value; one block, n[0] rows (a multiple of 8, at most 255).
using namespace AscendC;

extern "C" __global__ __aicore__ void kernel(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR workspace, GM_ADDR tiling)
{
    TestTiling t = ReadTiling(tiling);
    const int32_t rows = static_cast<int32_t>(t.n[0]);
    GlobalTensor<float> aGm, sumGm, maxGm;
    aGm.SetGlobalBuffer((__gm__ float*)a, rows * 64);
    sumGm.SetGlobalBuffer((__gm__ float*)b, rows);
    maxGm.SetGlobalBuffer((__gm__ float*)c, rows);
    TPipe pipe;
    TBuf<TPosition::VECCALC> xb, sb, mb;
    pipe.InitBuffer(xb, rows * 64 * sizeof(float));
    pipe.InitBuffer(sb, rows * sizeof(float));
    pipe.InitBuffer(mb, rows * sizeof(float));
    LocalTensor<float> x = xb.Get<float>(), s = sb.Get<float>(), m = mb.Get<float>();
    DataCopy(x, aGm, rows * 64);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WholeReduceSum(s, x, 64, rows, 1, 1, 8);
    WholeReduceMax(m, x, 64, rows, 1, 1, 8, ReduceOrder::ORDER_ONLY_VALUE);
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(sumGm, s, rows);
    DataCopy(maxGm, m, rows);
}
