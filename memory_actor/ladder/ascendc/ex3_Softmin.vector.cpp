// rung: vector
// task: ex3_Softmin
// summary: vector rung, softmax/normalisation family: ex3_Softmin, each row through UB (DataCopyPad in, ReduceMin, Adds/Muls/Exp, ReduceSum, Muls, DataCopyPad out), flag pairs between the pipes
using namespace AscendC;
constexpr int64_t MAX_ROW = 16384;  // floats of one row in UB: 64 KiB (rows up to this length)

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
    TBuf<TPosition::VECCALC> rowBuf, workBuf, oneBuf;
    pipe.InitBuffer(rowBuf, MAX_ROW * sizeof(float));
    pipe.InitBuffer(workBuf, MAX_ROW * sizeof(float));
    pipe.InitBuffer(oneBuf, 8 * sizeof(float));
    LocalTensor<float> row = rowBuf.Get<float>(), work = workBuf.Get<float>(), one = oneBuf.Get<float>();
    const int32_t n = (int32_t)cols;
    DataCopyExtParams copy{1, (uint32_t)(cols * sizeof(float)), 0, 0, 0};
    for (int64_t r = first; r < last; ++r) {
        DataCopyPad(row, xGm[r * cols], copy, DataCopyPadExtParams<float>{false, 0, 0, 0.0f});
        SetFlag<HardEvent::MTE2_V>(0);  // 1. the row is in UB before the vector unit reads it
        WaitFlag<HardEvent::MTE2_V>(0);
        ReduceMin(one, row, work, n, false);  // softmax of -x: subtract its largest value, -min(x)
        SetFlag<HardEvent::V_S>(0);  // 2. a reduction's result is in UB before the scalar unit reads it
        WaitFlag<HardEvent::V_S>(0);
        const float low = one.GetValue(0);
        SetFlag<HardEvent::S_V>(0);  // 3. read before the vector unit writes `one` again
        WaitFlag<HardEvent::S_V>(0);
        Adds(row, row, -low, n);
        Muls(row, row, -1.0f, n);  // min - x <= 0: Exp cannot overflow
        Exp(row, row, n);
        ReduceSum(one, row, work, n);
        SetFlag<HardEvent::V_S>(0);  // 2. again: the sum
        WaitFlag<HardEvent::V_S>(0);
        const float inv = 1.0f / one.GetValue(0);
        SetFlag<HardEvent::S_V>(0);  // 3. again
        WaitFlag<HardEvent::S_V>(0);
        Muls(row, row, inv, n);
        SetFlag<HardEvent::V_MTE3>(0);  // 4. the result is in UB before it is copied out
        WaitFlag<HardEvent::V_MTE3>(0);
        DataCopyPad(outGm[r * cols], row, copy);
        SetFlag<HardEvent::MTE3_MTE2>(0);  // 5. copied out before the next row overwrites UB
        WaitFlag<HardEvent::MTE3_MTE2>(0);
    }
}
