// rung: first
// task: r51_SumPool1d
// summary: first rung, pooling/window family, rank 3 with kernel_size only (stride = kernel_size, no padding): GlobalTensor GetValue/SetValue, one window sum per output element
using namespace AscendC;
constexpr int64_t LINE = 16;  // floats in a 64-byte cache line: each block writes whole lines of its own

extern "C" __global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR out, GM_ADDR workspace, GM_ADDR tiling)
{
    KernelTiling t;
    CopyTiling(&t, tiling);
    const int64_t lines = t.x_d0 * t.x_d1, L = t.x_d2, OL = t.out_d2, KS = t.kernel_size;  // a line: one (batch, channel)
    const int64_t total = lines * OL;
    const int64_t per = ((total + GetBlockNum() - 1) / GetBlockNum() + LINE - 1) / LINE * LINE;  // this block's share
    const int64_t begin = per * GetBlockIdx();
    const int64_t end = begin + per < total ? begin + per : total;  // the last block's share ends at the tail
    GlobalTensor<float> xGm, outGm;
    xGm.SetGlobalBuffer((__gm__ float*)x, lines * L);
    outGm.SetGlobalBuffer((__gm__ float*)out, total);
    for (int64_t i = begin; i < end; ++i) {
        const int64_t line = i / OL, o = i % OL;
        float sum = 0.0f;
        for (int64_t k = 0; k < KS; ++k) {
            sum += xGm.GetValue(line * L + o * KS + k);  // the window starts at o * kernel_size
        }
        outGm.SetValue(i, sum);
    }
}
