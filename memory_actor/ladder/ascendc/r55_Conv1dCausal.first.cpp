// rung: first
// task: r55_Conv1dCausal
// summary: first rung, convolution family, rank 3 with weight, bias and in/out channels and kernel_size: GlobalTensor GetValue/SetValue, one weighted window sum per output element, bias first, positions before 0 left out
using namespace AscendC;
constexpr int64_t LINE = 16;  // floats in a 64-byte cache line: each block writes whole lines of its own

extern "C" __global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR conv_weight, GM_ADDR conv_bias, GM_ADDR out,
                                             GM_ADDR workspace, GM_ADDR tiling)
{
    KernelTiling t;
    CopyTiling(&t, tiling);
    const int64_t B = t.x_d0, C = t.x_d1, L = t.x_d2, OC = t.out_d1, OL = t.out_d2, KS = t.conv_weight_d2;
    const int64_t total = B * OC * OL;
    const int64_t per = ((total + GetBlockNum() - 1) / GetBlockNum() + LINE - 1) / LINE * LINE;  // this block's share
    const int64_t begin = per * GetBlockIdx();
    const int64_t end = begin + per < total ? begin + per : total;  // the last block's share ends at the tail
    GlobalTensor<float> xGm, wGm, biasGm, outGm;
    xGm.SetGlobalBuffer((__gm__ float*)x, B * C * L);
    wGm.SetGlobalBuffer((__gm__ float*)conv_weight, OC * C * KS);  // weight is [OC, C, KS]
    biasGm.SetGlobalBuffer((__gm__ float*)conv_bias, OC);
    outGm.SetGlobalBuffer((__gm__ float*)out, total);
    for (int64_t i = begin; i < end; ++i) {
        const int64_t b = i / (OC * OL), oc = i / OL % OC, o = i % OL;
        float sum = biasGm.GetValue(oc);
        for (int64_t ic = 0; ic < C; ++ic) {
            for (int64_t k = 0; k < KS; ++k) {
                const int64_t p = o - (KS - 1) + k;  // the window ends at o: only the past and the present
                if (p < 0 || p >= L) continue;  // zero padding contributes nothing
                sum += wGm.GetValue((oc * C + ic) * KS + k) * xGm.GetValue((b * C + ic) * L + p);
            }
        }
        outGm.SetValue(i, sum);
    }
}
