// rung: first
// task: r56_Conv2dStride2
// summary: first rung, convolution family, rank 4 with weight, bias and in/out channels and kernel_size: GlobalTensor GetValue/SetValue, one weighted window sum per output element, bias first
using namespace AscendC;
constexpr int64_t LINE = 16;  // floats in a 64-byte cache line: each block writes whole lines of its own
constexpr int64_t STRIDE = 2;  // the reference's stride; no padding

extern "C" __global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR conv_weight, GM_ADDR conv_bias, GM_ADDR out,
                                             GM_ADDR workspace, GM_ADDR tiling)
{
    KernelTiling t;
    CopyTiling(&t, tiling);
    const int64_t B = t.x_d0, C = t.x_d1, H = t.x_d2, W = t.x_d3, OC = t.out_d1, OH = t.out_d2, OW = t.out_d3;
    const int64_t KH = t.conv_weight_d2, KW = t.conv_weight_d3;  // weight is [OC, C, KH, KW]
    const int64_t total = B * OC * OH * OW;
    const int64_t per = ((total + GetBlockNum() - 1) / GetBlockNum() + LINE - 1) / LINE * LINE;  // this block's share
    const int64_t begin = per * GetBlockIdx();
    const int64_t end = begin + per < total ? begin + per : total;  // the last block's share ends at the tail
    GlobalTensor<float> xGm, wGm, biasGm, outGm;
    xGm.SetGlobalBuffer((__gm__ float*)x, B * C * H * W);
    wGm.SetGlobalBuffer((__gm__ float*)conv_weight, OC * C * KH * KW);
    biasGm.SetGlobalBuffer((__gm__ float*)conv_bias, OC);
    outGm.SetGlobalBuffer((__gm__ float*)out, total);
    for (int64_t i = begin; i < end; ++i) {
        const int64_t b = i / (OC * OH * OW), oc = i / (OH * OW) % OC, oh = i / OW % OH, ow = i % OW;
        float sum = biasGm.GetValue(oc);
        for (int64_t ic = 0; ic < C; ++ic) {
            for (int64_t kh = 0; kh < KH; ++kh) {
                for (int64_t kw = 0; kw < KW; ++kw) {
                    sum += wGm.GetValue(((oc * C + ic) * KH + kh) * KW + kw) *
                           xGm.GetValue(((b * C + ic) * H + oh * STRIDE + kh) * W + ow * STRIDE + kw);
                }
            }
        }
        outGm.SetValue(i, sum);
    }
}
