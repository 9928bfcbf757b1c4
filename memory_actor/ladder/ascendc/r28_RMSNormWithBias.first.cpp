// rung: first
// task: r28_RMSNormWithBias
// summary: first rung, softmax/normalisation family, rank-2 rows with two rank-1 parameters (weight, bias) and int and float constructor scalars: GlobalTensor GetValue/SetValue, whole rows per block, a statistics pass then a writing pass
using namespace AscendC;
constexpr int64_t LINE = 16;  // floats in a 64-byte cache line: each block writes whole lines of its own

extern "C" __global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR weight, GM_ADDR bias, GM_ADDR out, GM_ADDR workspace, GM_ADDR tiling)
{
    KernelTiling t;
    CopyTiling(&t, tiling);
    const int64_t rows = t.x_d0, cols = t.x_d1;  // the last axis is the normalised one (features long)
    const float eps = t.eps;
    const int64_t per = ((rows + GetBlockNum() - 1) / GetBlockNum() + LINE - 1) / LINE * LINE;  // whole rows per block
    const int64_t begin = per * GetBlockIdx();
    const int64_t end = begin + per < rows ? begin + per : rows;  // the last block's rows end at the tail
    GlobalTensor<float> xGm, weightGm, biasGm, outGm;
    xGm.SetGlobalBuffer((__gm__ float*)x, rows * cols);
    weightGm.SetGlobalBuffer((__gm__ float*)weight, cols);
    biasGm.SetGlobalBuffer((__gm__ float*)bias, cols);
    outGm.SetGlobalBuffer((__gm__ float*)out, rows * cols);
    for (int64_t r = begin; r < end; ++r) {
        float squares = 0.0f;
        for (int64_t c = 0; c < cols; ++c) {
            const float v = xGm.GetValue(r * cols + c);
            squares += v * v;
        }
        const float scale = 1.0f / sqrtf(squares / (float)cols + eps);
        for (int64_t c = 0; c < cols; ++c) {
            outGm.SetValue(r * cols + c, xGm.GetValue(r * cols + c) * scale * weightGm.GetValue(c) + biasGm.GetValue(c));
        }
    }
}
