// rung: first
// task: r25_EpsilonInsensitiveLoss
// summary: first rung, row reduction of two rank-2 inputs to one scalar with a constructor scalar: GlobalTensor GetValue/SetValue, the one output line is block 0's, a float sum per row then over the rows
using namespace AscendC;
constexpr int64_t LINE = 16;  // floats in a 64-byte cache line: each block writes whole lines of its own

extern "C" __global__ __aicore__ void kernel(GM_ADDR predictions, GM_ADDR targets, GM_ADDR out, GM_ADDR workspace, GM_ADDR tiling)
{
    KernelTiling t;
    CopyTiling(&t, tiling);
    const int64_t rows = t.predictions_d0, cols = t.predictions_d1;
    const float epsilon = t.epsilon;
    const int64_t total = 1;  // a 0-d output is one element
    const int64_t per = ((total + GetBlockNum() - 1) / GetBlockNum() + LINE - 1) / LINE * LINE;  // this block's share
    const int64_t begin = per * GetBlockIdx();
    const int64_t end = begin + per < total ? begin + per : total;  // block 0 holds it; the others have none
    GlobalTensor<float> predictionsGm, targetsGm, outGm;
    predictionsGm.SetGlobalBuffer((__gm__ float*)predictions, rows * cols);
    targetsGm.SetGlobalBuffer((__gm__ float*)targets, rows * cols);
    outGm.SetGlobalBuffer((__gm__ float*)out, total);
    for (int64_t i = begin; i < end; ++i) {
        float sum = 0.0f;
        for (int64_t r = 0; r < rows; ++r) {
            float rowSum = 0.0f;  // a short sum per row, then the rows: one long float sum would drift
            for (int64_t c = 0; c < cols; ++c) {
                const float d = predictionsGm.GetValue(r * cols + c) - targetsGm.GetValue(r * cols + c);
                const float excess = (d < 0.0f ? -d : d) - epsilon;
                rowSum += excess > 0.0f ? excess : 0.0f;
            }
            sum += rowSum;
        }
        outGm.SetValue(i, sum / (float)(rows * cols));
    }
}
