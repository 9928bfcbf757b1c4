// c[r, :] = softmax(a[r, :]); cols a multiple of 8; rows over blocks.
using namespace AscendC;

extern "C" __global__ __aicore__ void kernel(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR workspace, GM_ADDR tiling)
{
    TestTiling t = ReadTiling(tiling);
    const int64_t rows = t.n[0], cols = t.n[1];
    const int64_t per = (rows + GetBlockNum() - 1) / GetBlockNum();
    const int64_t first = per * GetBlockIdx(), last = first + per < rows ? first + per : rows;
    GlobalTensor<float> xGm, yGm;
    xGm.SetGlobalBuffer((__gm__ float*)a, rows * cols);
    yGm.SetGlobalBuffer((__gm__ float*)c, rows * cols);
    TPipe pipe;
    TQue<TPosition::VECIN, 1> in;
    TQue<TPosition::VECOUT, 1> out;
    TBuf<TPosition::VECCALC> workBuf, oneBuf;
    pipe.InitBuffer(in, 1, cols * sizeof(float));
    pipe.InitBuffer(out, 1, cols * sizeof(float));
    pipe.InitBuffer(workBuf, cols * sizeof(float));
    pipe.InitBuffer(oneBuf, 32);
    LocalTensor<float> work = workBuf.Get<float>(), one = oneBuf.Get<float>();
    const int32_t n = static_cast<int32_t>(cols);
    for (int64_t r = first; r < last; ++r) {
        LocalTensor<float> x = in.AllocTensor<float>();
        DataCopy(x, xGm[r * cols], n);
        in.EnQue(x);
        LocalTensor<float> xi = in.DeQue<float>();
        LocalTensor<float> y = out.AllocTensor<float>();
        ReduceMax(one, xi, work, n);
        const float peak = one.GetValue(0);
        Adds(y, xi, -peak, n);
        Exp(y, y, n);
        ReduceSum(one, y, work, n);
        const float sum = one.GetValue(0);
        Muls(y, y, 1.0f / sum, n);
        out.EnQue(y);
        in.FreeTensor(xi);
        LocalTensor<float> yo = out.DeQue<float>();
        DataCopy(yGm[r * cols], yo, n);
        out.FreeTensor(yo);
    }
}
