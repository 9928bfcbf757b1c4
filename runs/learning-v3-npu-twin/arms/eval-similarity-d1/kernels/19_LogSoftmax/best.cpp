using namespace AscendC;

constexpr int64_t MAX_ROW = 8192;

extern "C" __global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR out, GM_ADDR workspace, GM_ADDR tiling)
{
    KernelTiling t;
    CopyTiling(&t, tiling);
    const int64_t rows = t.x_d0, cols = t.x_d1;
    const int64_t cores = AscendC::GetBlockNum();
    const int64_t per = (rows + cores - 1) / cores;
    const int64_t first = AscendC::GetBlockIdx() * per;
    const int64_t last = first + per < rows ? first + per : rows;
    AscendC::GlobalTensor<float> xGm, outGm;
    xGm.SetGlobalBuffer((__gm__ float*)x, rows * cols);
    outGm.SetGlobalBuffer((__gm__ float*)out, rows * cols);
    AscendC::TPipe pipe;
    AscendC::TBuf<AscendC::TPosition::VECCALC> rowBuf, expBuf, workBuf, oneBuf;
    pipe.InitBuffer(rowBuf, MAX_ROW * sizeof(float));
    pipe.InitBuffer(expBuf, MAX_ROW * sizeof(float));
    pipe.InitBuffer(workBuf, MAX_ROW * sizeof(float));
    pipe.InitBuffer(oneBuf, 8 * sizeof(float));
    AscendC::LocalTensor<float> row = rowBuf.Get<float>(), ex = expBuf.Get<float>();
    AscendC::LocalTensor<float> work = workBuf.Get<float>(), one = oneBuf.Get<float>();
    const int32_t n = static_cast<int32_t>(cols);
    AscendC::DataCopyExtParams params{1, static_cast<uint32_t>(cols * sizeof(float)), 0, 0, 0};
    for (int64_t r = first; r < last; ++r) {
        AscendC::DataCopyPad(row, xGm[r * cols], params, AscendC::DataCopyPadExtParams<float>{false, 0, 0, 0.0f});
        AscendC::SetFlag<AscendC::HardEvent::MTE2_V>(0);
        AscendC::WaitFlag<AscendC::HardEvent::MTE2_V>(0);
        AscendC::ReduceMax(one, row, work, n, false);
        AscendC::SetFlag<AscendC::HardEvent::V_S>(0);
        AscendC::WaitFlag<AscendC::HardEvent::V_S>(0);
        const float peak = one.GetValue(0);
        AscendC::SetFlag<AscendC::HardEvent::S_V>(0);
        AscendC::WaitFlag<AscendC::HardEvent::S_V>(0);
        AscendC::Adds(row, row, -peak, n);          // x - max
        AscendC::Exp(ex, row, n);
        AscendC::ReduceSum(one, ex, work, n);
        AscendC::Ln(one, one, 1);                  // ln(sum)
        AscendC::SetFlag<AscendC::HardEvent::V_S>(0);
        AscendC::WaitFlag<AscendC::HardEvent::V_S>(0);
        const float logSum = one.GetValue(0);
        AscendC::SetFlag<AscendC::HardEvent::S_V>(0);
        AscendC::WaitFlag<AscendC::HardEvent::S_V>(0);
        AscendC::Adds(row, row, -logSum, n);
        AscendC::SetFlag<AscendC::HardEvent::V_MTE3>(0);
        AscendC::WaitFlag<AscendC::HardEvent::V_MTE3>(0);
        AscendC::DataCopyPad(outGm[r * cols], row, params);
        AscendC::SetFlag<AscendC::HardEvent::MTE3_MTE2>(0);  // the next row overwrites `row`
        AscendC::WaitFlag<AscendC::HardEvent::MTE3_MTE2>(0);
    }
}
