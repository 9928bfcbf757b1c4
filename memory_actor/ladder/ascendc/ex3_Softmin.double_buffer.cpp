// rung: double_buffer
// task: ex3_Softmin
// summary: double-buffered rung, softmax/normalisation family: ex3_Softmin, the vector rung's rows through two-buffer TQue pairs (the next row's copy-in overlaps this row's ReduceMin, Exp, ReduceSum, Muls and copy-out)
using namespace AscendC;
constexpr int64_t MAX_ROW = 8192;  // floats of one row in UB: 32 KiB, two per queue (rows up to this length)

extern "C" __global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR out, GM_ADDR workspace, GM_ADDR tiling)
{
    KernelTiling t;
    CopyTiling(&t, tiling);
    const int64_t rows = t.x_d0, cols = t.x_d1;
    const int64_t per = (rows + GetBlockNum() - 1) / GetBlockNum();  // whole rows per block
    const int64_t first = per * GetBlockIdx();
    const int64_t last = first + per < rows ? first + per : rows;  // the last block's rows end at the tail
    GlobalTensor<float> xGm, outGm;
    xGm.SetGlobalBuffer((__gm__ float*)x, rows * cols);
    outGm.SetGlobalBuffer((__gm__ float*)out, rows * cols);
    TPipe pipe;
    TQue<TPosition::VECIN, 2> inQ;  // 2 buffers each: the queues carry the flags between copies and vector
    TQue<TPosition::VECOUT, 2> outQ;
    TBuf<TPosition::VECCALC> workBuf, oneBuf;
    pipe.InitBuffer(inQ, 2, MAX_ROW * sizeof(float));
    pipe.InitBuffer(outQ, 2, MAX_ROW * sizeof(float));
    pipe.InitBuffer(workBuf, MAX_ROW * sizeof(float));
    pipe.InitBuffer(oneBuf, 8 * sizeof(float));
    LocalTensor<float> work = workBuf.Get<float>(), one = oneBuf.Get<float>();
    const int32_t n = (int32_t)cols;
    DataCopyExtParams copy{1, (uint32_t)(cols * sizeof(float)), 0, 0, 0};
    for (int64_t r = first; r < last; ++r) {
        LocalTensor<float> a = inQ.AllocTensor<float>();
        DataCopyPad(a, xGm[r * cols], copy, DataCopyPadExtParams<float>{false, 0, 0, 0.0f});
        inQ.EnQue(a);  // copy-in -> vector
        a = inQ.DeQue<float>();
        LocalTensor<float> c = outQ.AllocTensor<float>();
        ReduceMin(one, a, work, n, false);  // softmax of -x: subtract its largest value, -min(x)
        SetFlag<HardEvent::V_S>(0);  // a reduction's result is in UB before the scalar unit reads it
        WaitFlag<HardEvent::V_S>(0);
        const float low = one.GetValue(0);
        SetFlag<HardEvent::S_V>(0);  // read before the vector unit writes `one` again
        WaitFlag<HardEvent::S_V>(0);
        Adds(c, a, -low, n);
        Muls(c, c, -1.0f, n);  // min - x <= 0: Exp cannot overflow
        Exp(c, c, n);
        inQ.FreeTensor(a);
        ReduceSum(one, c, work, n);
        SetFlag<HardEvent::V_S>(0);  // again: the sum
        WaitFlag<HardEvent::V_S>(0);
        const float inv = 1.0f / one.GetValue(0);
        SetFlag<HardEvent::S_V>(0);
        WaitFlag<HardEvent::S_V>(0);
        Muls(c, c, inv, n);
        outQ.EnQue(c);  // vector -> copy-out
        c = outQ.DeQue<float>();
        DataCopyPad(outGm[r * cols], c, copy);
        outQ.FreeTensor(c);
    }
}
