// rung: first
// task: ex3_Softmin
// summary: first rung, softmax/normalisation family: ex3_Softmin, GlobalTensor GetValue/SetValue, three passes over each row of the block
using namespace AscendC;
constexpr int64_t LINE = 16;  // floats in a 64-byte cache line: each block writes whole lines of its own

extern "C" __global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR out, GM_ADDR workspace, GM_ADDR tiling)
{
    KernelTiling t;
    CopyTiling(&t, tiling);
    const int64_t rows = t.x_d0, cols = t.x_d1;
    const int64_t per = ((rows + GetBlockNum() - 1) / GetBlockNum() + LINE - 1) / LINE * LINE;  // whole rows per block
    const int64_t first = per * GetBlockIdx();
    const int64_t last = first + per < rows ? first + per : rows;  // the last block's rows end at the tail
    GlobalTensor<float> xGm, outGm;
    xGm.SetGlobalBuffer((__gm__ float*)x, rows * cols);
    outGm.SetGlobalBuffer((__gm__ float*)out, rows * cols);
    for (int64_t r = first; r < last; ++r) {
        float low = xGm.GetValue(r * cols);  // softmax of -x: subtract the largest -x, the row's minimum
        for (int64_t c = 1; c < cols; ++c) {
            const float v = xGm.GetValue(r * cols + c);
            low = v < low ? v : low;
        }
        float sum = 0.0f;
        for (int64_t c = 0; c < cols; ++c) {
            sum += expf(low - xGm.GetValue(r * cols + c));
        }
        for (int64_t c = 0; c < cols; ++c) {
            outGm.SetValue(r * cols + c, expf(low - xGm.GetValue(r * cols + c)) / sum);
        }
    }
}
