// tensors: 3
// Row sums and row maxima of an [n[0] x n[1]] matrix whose rows are not 32-byte multiples:
// DataCopyPad pads each row in UB (to -FLT_MAX, for the maximum), Sum with SumParams sums the
// n valid elements of each padded row, ReduceMax with the AR pattern reduces whole padded rows.
// The host half sizes the temporary buffers with GetSumMaxMinTmpSize / GetReduceMaxMaxMinTmpSize.
using namespace AscendC;

struct RowsTiling {
    uint32_t rows, cols, inner;  // inner: cols padded to 32 bytes
    uint32_t rowsPerBlock, rowsPerTile;
    uint32_t tmpBytes;
};

void TilingFunc(const KernelTiling& shapes, HostTiling& host)
{
    RowsTiling t;
    t.rows = static_cast<uint32_t>(shapes.n[0]);
    t.cols = static_cast<uint32_t>(shapes.n[1]);
    t.inner = AscendC::DivCeil(t.cols, 8u) * 8;
    host.blockDim = t.rows < host.coreNum ? t.rows : host.coreNum;
    t.rowsPerBlock = AscendC::DivCeil(t.rows, host.blockDim);
    t.rowsPerTile = 8;
    uint32_t maxSum = 0, minSum = 0, maxReduce = 0, minReduce = 0;
    AscendC::GetSumMaxMinTmpSize(t.cols, sizeof(float), false, maxSum, minSum);
    AscendC::GetReduceMaxMaxMinTmpSize(ge::Shape({t.rowsPerTile, t.inner}), ge::DT_FLOAT, AscendC::ReducePattern::AR,
                                       true, false, maxReduce, minReduce);
    t.tmpBytes = minSum > minReduce ? minSum : minReduce;
    host.SetTiling(t);
}

extern "C" __global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR sums, GM_ADDR maxima, GM_ADDR workspace, GM_ADDR tiling)
{
    RowsTiling t;
    CopyTiling(&t, tiling);
    const uint32_t first = t.rowsPerBlock * GetBlockIdx();
    if (first >= t.rows) {
        return;
    }
    const uint32_t rows = t.rows - first < t.rowsPerBlock ? t.rows - first : t.rowsPerBlock;
    GlobalTensor<float> xGm, sumGm, maxGm;
    xGm.SetGlobalBuffer((__gm__ float*)x + first * t.cols, rows * t.cols);
    sumGm.SetGlobalBuffer((__gm__ float*)sums + first, rows);
    maxGm.SetGlobalBuffer((__gm__ float*)maxima + first, rows);
    TPipe pipe;
    TQue<TPosition::VECIN, 1> inQueue;
    TQue<TPosition::VECOUT, 1> sumQueue, maxQueue;
    TBuf<TPosition::VECCALC> tmp;
    pipe.InitBuffer(inQueue, 1, t.rowsPerTile * t.inner * sizeof(float));
    pipe.InitBuffer(sumQueue, 1, 32);
    pipe.InitBuffer(maxQueue, 1, 32);
    pipe.InitBuffer(tmp, t.tmpBytes);
    for (uint32_t r = 0; r < rows; r += t.rowsPerTile) {
        const uint32_t n = rows - r < t.rowsPerTile ? rows - r : t.rowsPerTile;
        LocalTensor<float> xLocal = inQueue.AllocTensor<float>();
        DataCopyExtParams in{static_cast<uint16_t>(n), t.cols * static_cast<uint32_t>(sizeof(float)), 0, 0, 0};
        DataCopyPadExtParams<float> pad{true, 0, static_cast<uint8_t>(t.inner - t.cols), -3.4e38f};
        DataCopyPad(xLocal, xGm[r * t.cols], in, pad);
        inQueue.EnQue(xLocal);
        xLocal = inQueue.DeQue<float>();
        LocalTensor<float> sumLocal = sumQueue.AllocTensor<float>();
        LocalTensor<float> maxLocal = maxQueue.AllocTensor<float>();
        LocalTensor<uint8_t> scratch = tmp.Get<uint8_t>();
        Sum(sumLocal, xLocal, scratch, SumParams{n, t.inner, t.cols});
        const uint32_t shape[] = {n, t.inner};
        ReduceMax<float, Pattern::Reduce::AR>(maxLocal, xLocal, scratch, shape, true);
        inQueue.FreeTensor(xLocal);
        sumQueue.EnQue(sumLocal);
        maxQueue.EnQue(maxLocal);
        DataCopyExtParams out{1, n * static_cast<uint32_t>(sizeof(float)), 0, 0, 0};
        sumLocal = sumQueue.DeQue<float>();
        DataCopyPad(sumGm[r], sumLocal, out);
        sumQueue.FreeTensor(sumLocal);
        maxLocal = maxQueue.DeQue<float>();
        DataCopyPad(maxGm[r], maxLocal, out);
        maxQueue.FreeTensor(maxLocal);
    }
}
