// rung: first
// task: r57_DepthwiseConv2dStride2
// summary: first rung, convolution family, rank 4 depthwise (one filter per channel, no bias) with channels and kernel_size: GlobalTensor GetValue/SetValue, one weighted window sum per output element, padded positions left out
using namespace AscendC;
constexpr int64_t LINE = 16;  // floats in a 64-byte cache line: each block writes whole lines of its own
constexpr int64_t STRIDE = 2;  // the reference's stride; padding is kernel_size / 2

extern "C" __global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR conv_weight, GM_ADDR out, GM_ADDR workspace,
                                             GM_ADDR tiling)
{
    KernelTiling t;
    CopyTiling(&t, tiling);
    const int64_t B = t.x_d0, C = t.x_d1, H = t.x_d2, W = t.x_d3, OH = t.out_d2, OW = t.out_d3;
    const int64_t KH = t.conv_weight_d2, KW = t.conv_weight_d3, PH = KH / 2, PW = KW / 2;  // weight is [C, 1, KH, KW]
    const int64_t total = B * C * OH * OW;
    const int64_t per = ((total + GetBlockNum() - 1) / GetBlockNum() + LINE - 1) / LINE * LINE;  // this block's share
    const int64_t begin = per * GetBlockIdx();
    const int64_t end = begin + per < total ? begin + per : total;  // the last block's share ends at the tail
    GlobalTensor<float> xGm, wGm, outGm;
    xGm.SetGlobalBuffer((__gm__ float*)x, B * C * H * W);
    wGm.SetGlobalBuffer((__gm__ float*)conv_weight, C * KH * KW);
    outGm.SetGlobalBuffer((__gm__ float*)out, total);
    for (int64_t i = begin; i < end; ++i) {
        const int64_t b = i / (C * OH * OW), c = i / (OH * OW) % C, oh = i / OW % OH, ow = i % OW;
        float sum = 0.0f;
        for (int64_t kh = 0; kh < KH; ++kh) {
            const int64_t h = oh * STRIDE - PH + kh;
            if (h < 0 || h >= H) continue;  // zero padding contributes nothing
            for (int64_t kw = 0; kw < KW; ++kw) {
                const int64_t w = ow * STRIDE - PW + kw;
                if (w < 0 || w >= W) continue;
                sum += wGm.GetValue((c * KH + kh) * KW + kw) * xGm.GetValue(((b * C + c) * H + h) * W + w);
            }
        }
        outGm.SetValue(i, sum);
    }
}
