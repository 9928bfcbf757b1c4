// rung: first
// task: r29_BatchNormEvalTanh
// summary: first rung, softmax/normalisation family, rank-4 NCHW with four rank-1 per-channel parameters and int and float constructor scalars: GlobalTensor GetValue/SetValue over each block's share of the output, the channel read from the flat index
using namespace AscendC;
constexpr int64_t LINE = 16;  // floats in a 64-byte cache line: each block writes whole lines of its own

extern "C" __global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR weight, GM_ADDR bias, GM_ADDR running_mean, GM_ADDR running_var, GM_ADDR out, GM_ADDR workspace, GM_ADDR tiling)
{
    KernelTiling t;
    CopyTiling(&t, tiling);
    const int64_t channels = t.x_d1, plane = t.x_d2 * t.x_d3;  // one channel's H x W values are contiguous
    const float eps = t.eps;
    const int64_t total = t.out_d0 * t.out_d1 * t.out_d2 * t.out_d3;
    const int64_t per = ((total + GetBlockNum() - 1) / GetBlockNum() + LINE - 1) / LINE * LINE;  // this block's share
    const int64_t begin = per * GetBlockIdx();
    const int64_t end = begin + per < total ? begin + per : total;  // the last block's share ends at the tail
    GlobalTensor<float> xGm, weightGm, biasGm, meanGm, varGm, outGm;
    xGm.SetGlobalBuffer((__gm__ float*)x, total);
    weightGm.SetGlobalBuffer((__gm__ float*)weight, channels);
    biasGm.SetGlobalBuffer((__gm__ float*)bias, channels);
    meanGm.SetGlobalBuffer((__gm__ float*)running_mean, channels);
    varGm.SetGlobalBuffer((__gm__ float*)running_var, channels);
    outGm.SetGlobalBuffer((__gm__ float*)out, total);
    for (int64_t i = begin; i < end; ++i) {
        const int64_t c = (i / plane) % channels;  // NCHW: the channel of flat index i
        const float scale = weightGm.GetValue(c) / sqrtf(varGm.GetValue(c) + eps);
        const float y = (xGm.GetValue(i) - meanGm.GetValue(c)) * scale + biasGm.GetValue(c);
        outGm.SetValue(i, tanhf(y));
    }
}
