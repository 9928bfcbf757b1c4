// b[r] = sum(a[r, :]) with ReduceSum, c[r] = max(a[r, :]) with ReduceMax; rows over blocks,
// results gathered in UB and copied out with DataCopyPad (rows per block need not be aligned).
using namespace AscendC;

extern "C" __global__ __aicore__ void kernel(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR workspace, GM_ADDR tiling)
{
    TestTiling t = ReadTiling(tiling);
    const int64_t rows = t.n[0], cols = t.n[1];
    const int64_t per = (rows + GetBlockNum() - 1) / GetBlockNum();
    const int64_t first = per * GetBlockIdx(), last = first + per < rows ? first + per : rows;
    if (first >= last) return;
    GlobalTensor<float> aGm, sumGm, maxGm;
    aGm.SetGlobalBuffer((__gm__ float*)a, rows * cols);
    sumGm.SetGlobalBuffer((__gm__ float*)b, rows);
    maxGm.SetGlobalBuffer((__gm__ float*)c, rows);
    TPipe pipe;
    TBuf<TPosition::VECCALC> rowBuf, workBuf, oneBuf, sums, maxes;
    pipe.InitBuffer(rowBuf, cols * sizeof(float));
    pipe.InitBuffer(workBuf, cols * sizeof(float));
    pipe.InitBuffer(oneBuf, 32);
    pipe.InitBuffer(sums, per * sizeof(float));
    pipe.InitBuffer(maxes, per * sizeof(float));
    LocalTensor<float> row = rowBuf.Get<float>(), work = workBuf.Get<float>(), one = oneBuf.Get<float>();
    LocalTensor<float> s = sums.Get<float>(), m = maxes.Get<float>();
    DataCopyExtParams in{1, static_cast<uint32_t>(cols * sizeof(float)), 0, 0, 0};
    for (int64_t r = first; r < last; ++r) {
        DataCopyPad(row, aGm[r * cols], in, DataCopyPadExtParams<float>{false, 0, 0, 0.0f});
        SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
        WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
        ReduceSum(one, row, work, static_cast<int32_t>(cols));
        s.SetValue(r - first, one.GetValue(0));
        ReduceMax(one, row, work, static_cast<int32_t>(cols), true);
        m.SetValue(r - first, one.GetValue(0));
    }
    DataCopyExtParams out{1, static_cast<uint32_t>((last - first) * sizeof(float)), 0, 0, 0};
    DataCopyPad(sumGm[first], s, out);
    DataCopyPad(maxGm[first], m, out);
}
