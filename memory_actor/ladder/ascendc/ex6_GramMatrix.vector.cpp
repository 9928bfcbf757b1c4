// rung: vector
// task: ex6_GramMatrix
// summary: vector rung, matmul family: ex6_GramMatrix, out = x @ x^T as row dot products on the vector unit (rows through UB by DataCopyPad, Mul and ReduceSum), each row of out copied out whole; flag pairs between the pipes
using namespace AscendC;
constexpr int64_t MAX_K = 8192;  // floats of a row of x in UB (rows up to this length)
constexpr int64_t MAX_M = 8192;  // floats of a row of out in UB

extern "C" __global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR out, GM_ADDR workspace, GM_ADDR tiling)
{
    KernelTiling t;
    CopyTiling(&t, tiling);
    const int64_t M = t.x_d0, K = t.x_d1;  // out[i, j] = dot(x[i, :], x[j, :])
    const int64_t per = (M + GetBlockNum() - 1) / GetBlockNum();  // each block owns whole rows of out
    const int64_t first = per * GetBlockIdx();
    const int64_t last = first + per < M ? first + per : M;  // the last block's rows end at the tail
    GlobalTensor<float> xGm, outGm;
    xGm.SetGlobalBuffer((__gm__ float*)x, M * K);
    outGm.SetGlobalBuffer((__gm__ float*)out, M * M);
    TPipe pipe;
    TBuf<TPosition::VECCALC> aBuf, bBuf, workBuf, oneBuf, resBuf;
    pipe.InitBuffer(aBuf, MAX_K * sizeof(float));
    pipe.InitBuffer(bBuf, MAX_K * sizeof(float));
    pipe.InitBuffer(workBuf, MAX_K * sizeof(float));
    pipe.InitBuffer(oneBuf, 8 * sizeof(float));
    pipe.InitBuffer(resBuf, MAX_M * sizeof(float));
    LocalTensor<float> a = aBuf.Get<float>(), b = bBuf.Get<float>(), work = workBuf.Get<float>();
    LocalTensor<float> one = oneBuf.Get<float>(), res = resBuf.Get<float>();
    DataCopyExtParams row{1, (uint32_t)(K * sizeof(float)), 0, 0, 0};
    DataCopyPadExtParams<float> pad{false, 0, 0, 0.0f};
    for (int64_t i = first; i < last; ++i) {
        DataCopyPad(a, xGm[i * K], row, pad);
        for (int64_t j = 0; j < M; ++j) {
            DataCopyPad(b, xGm[j * K], row, pad);
            SetFlag<HardEvent::MTE2_V>(0);  // 1. the rows are in UB before the vector unit reads them
            WaitFlag<HardEvent::MTE2_V>(0);
            Mul(b, a, b, (int32_t)K);            // x[i, k] * x[j, k]
            ReduceSum(one, b, work, (int32_t)K);  // their sum in one[0]
            SetFlag<HardEvent::V_S>(0);  // 2. the sum is in UB before the scalar unit reads it
            WaitFlag<HardEvent::V_S>(0);
            res.SetValue(j, one.GetValue(0));  // out[i, j]
            SetFlag<HardEvent::S_V>(0);  // 3. read before the next ReduceSum overwrites `one`
            WaitFlag<HardEvent::S_V>(0);
        }
        SetFlag<HardEvent::S_MTE3>(0);  // 4. the row of out is in UB before it is copied out
        WaitFlag<HardEvent::S_MTE3>(0);
        DataCopyPad(outGm[i * M], res, DataCopyExtParams{1, (uint32_t)(M * sizeof(float)), 0, 0, 0});
        SetFlag<HardEvent::MTE3_S>(0);  // 5. copied out before the next row's results overwrite it
        WaitFlag<HardEvent::MTE3_S>(0);
    }
}
