// rung: first
// task: r54_SumPool2d
// summary: first rung, pooling/window family, rank 4 with kernel_size and stride (no padding): GlobalTensor GetValue/SetValue, one window sum per output element
using namespace AscendC;
constexpr int64_t LINE = 16;  // floats in a 64-byte cache line: each block writes whole lines of its own

extern "C" __global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR out, GM_ADDR workspace, GM_ADDR tiling)
{
    KernelTiling t;
    CopyTiling(&t, tiling);
    const int64_t planes = t.x_d0 * t.x_d1, H = t.x_d2, W = t.x_d3, OH = t.out_d2, OW = t.out_d3;  // a plane: one (batch, channel)
    const int64_t KS = t.kernel_size, S = t.stride;
    const int64_t total = planes * OH * OW;
    const int64_t per = ((total + GetBlockNum() - 1) / GetBlockNum() + LINE - 1) / LINE * LINE;  // this block's share
    const int64_t begin = per * GetBlockIdx();
    const int64_t end = begin + per < total ? begin + per : total;  // the last block's share ends at the tail
    GlobalTensor<float> xGm, outGm;
    xGm.SetGlobalBuffer((__gm__ float*)x, planes * H * W);
    outGm.SetGlobalBuffer((__gm__ float*)out, total);
    for (int64_t i = begin; i < end; ++i) {
        const int64_t plane = i / (OH * OW), oh = i / OW % OH, ow = i % OW;
        float sum = 0.0f;
        for (int64_t kh = 0; kh < KS; ++kh) {
            for (int64_t kw = 0; kw < KS; ++kw) {
                sum += xGm.GetValue((plane * H + oh * S + kh) * W + ow * S + kw);
            }
        }
        outGm.SetValue(i, sum);
    }
}
