// rung: first
// task: r26_BrierScoreLoss
// summary: first rung, softmax/normalisation family, two rank-2 inputs to a 0-d loss: GlobalTensor GetValue/SetValue, the one output line is block 0's, per row a max, an exp-sum and a compare pass
using namespace AscendC;
constexpr int64_t LINE = 16;  // floats in a 64-byte cache line: each block writes whole lines of its own

extern "C" __global__ __aicore__ void kernel(GM_ADDR logits, GM_ADDR targets, GM_ADDR out, GM_ADDR workspace, GM_ADDR tiling)
{
    KernelTiling t;
    CopyTiling(&t, tiling);
    const int64_t rows = t.logits_d0, cols = t.logits_d1;
    const int64_t total = 1;  // a 0-d output is one element
    const int64_t per = ((total + GetBlockNum() - 1) / GetBlockNum() + LINE - 1) / LINE * LINE;  // this block's share
    const int64_t begin = per * GetBlockIdx();
    const int64_t end = begin + per < total ? begin + per : total;  // block 0 holds it; the others have none
    GlobalTensor<float> logitsGm, targetsGm, outGm;
    logitsGm.SetGlobalBuffer((__gm__ float*)logits, rows * cols);
    targetsGm.SetGlobalBuffer((__gm__ float*)targets, rows * cols);
    outGm.SetGlobalBuffer((__gm__ float*)out, total);
    for (int64_t i = begin; i < end; ++i) {
        float sumRows = 0.0f;
        for (int64_t r = 0; r < rows; ++r) {
            float high = logitsGm.GetValue(r * cols);  // subtract the row's largest logit: exp never overflows
            for (int64_t c = 1; c < cols; ++c) {
                const float v = logitsGm.GetValue(r * cols + c);
                high = v > high ? v : high;
            }
            float sum = 0.0f;
            for (int64_t c = 0; c < cols; ++c) {
                sum += expf(logitsGm.GetValue(r * cols + c) - high);
            }
            float rowTotal = 0.0f;  // a short sum per row, then the rows: one long float sum would drift
            for (int64_t c = 0; c < cols; ++c) {
                const float d = expf(logitsGm.GetValue(r * cols + c) - high) / sum - targetsGm.GetValue(r * cols + c);
                rowTotal += d * d;
            }
            sumRows += rowTotal;
        }
        outGm.SetValue(i, sumRows / (float)rows);  // the mean over rows
    }
}
