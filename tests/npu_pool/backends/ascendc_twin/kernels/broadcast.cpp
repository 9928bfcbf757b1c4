// c[r, :] = relu(a[r, :] + b[:]) for rows x cols (cols any length: DataCopyPad); rows split over blocks.
using namespace AscendC;

extern "C" __global__ __aicore__ void kernel(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR workspace, GM_ADDR tiling)
{
    TestTiling t = ReadTiling(tiling);
    const int64_t rows = t.n[0], cols = t.n[1];
    const int64_t per = (rows + GetBlockNum() - 1) / GetBlockNum();
    const int64_t first = per * GetBlockIdx(), last = first + per < rows ? first + per : rows;
    GlobalTensor<float> aGm, bGm, cGm;
    aGm.SetGlobalBuffer((__gm__ float*)a, rows * cols);
    bGm.SetGlobalBuffer((__gm__ float*)b, cols);
    cGm.SetGlobalBuffer((__gm__ float*)c, rows * cols);
    TPipe pipe;
    TQue<TPosition::VECIN, 2> in;
    TQue<TPosition::VECOUT, 2> out;
    TBuf<TPosition::VECCALC> biasBuf;
    const uint32_t bytes = static_cast<uint32_t>(cols * sizeof(float));
    pipe.InitBuffer(in, 2, bytes);
    pipe.InitBuffer(out, 2, bytes);
    pipe.InitBuffer(biasBuf, bytes);
    LocalTensor<float> bias = biasBuf.Get<float>();
    DataCopyExtParams row{1, bytes, 0, 0, 0};
    DataCopyPad(bias, bGm, row, DataCopyPadExtParams<float>{false, 0, 0, 0.0f});
    SetFlag<HardEvent::MTE2_V>(0);
    WaitFlag<HardEvent::MTE2_V>(0);
    for (int64_t r = first; r < last; ++r) {
        LocalTensor<float> x = in.AllocTensor<float>();
        DataCopyPad(x, aGm[r * cols], row, DataCopyPadExtParams<float>{false, 0, 0, 0.0f});
        in.EnQue(x);
        LocalTensor<float> xi = in.DeQue<float>();
        LocalTensor<float> y = out.AllocTensor<float>();
        Add(y, xi, bias, static_cast<int32_t>(cols));
        Relu(y, y, static_cast<int32_t>(cols));
        out.EnQue(y);
        in.FreeTensor(xi);
        LocalTensor<float> yo = out.DeQue<float>();
        DataCopyPad(cGm[r * cols], yo, row);
        out.FreeTensor(yo);
    }
}
