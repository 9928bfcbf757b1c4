// rung: first
// task: r53_MinPool2dPadded
// summary: first rung, pooling/window family, rank 4 with kernel_size, stride and padding: GlobalTensor GetValue/SetValue, one window's in-range part per output element
using namespace AscendC;
constexpr int64_t LINE = 16;  // floats in a 64-byte cache line: each block writes whole lines of its own

extern "C" __global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR out, GM_ADDR workspace, GM_ADDR tiling)
{
    KernelTiling t;
    CopyTiling(&t, tiling);
    const int64_t planes = t.x_d0 * t.x_d1, H = t.x_d2, W = t.x_d3, OH = t.out_d2, OW = t.out_d3;  // a plane: one (batch, channel)
    const int64_t KS = t.kernel_size, S = t.stride, P = t.padding;
    const int64_t total = planes * OH * OW;
    const int64_t per = ((total + GetBlockNum() - 1) / GetBlockNum() + LINE - 1) / LINE * LINE;  // this block's share
    const int64_t begin = per * GetBlockIdx();
    const int64_t end = begin + per < total ? begin + per : total;  // the last block's share ends at the tail
    GlobalTensor<float> xGm, outGm;
    xGm.SetGlobalBuffer((__gm__ float*)x, planes * H * W);
    outGm.SetGlobalBuffer((__gm__ float*)out, total);
    for (int64_t i = begin; i < end; ++i) {
        const int64_t plane = i / (OH * OW), oh = i / OW % OH, ow = i % OW;
        const int64_t h0 = oh * S - P, w0 = ow * S - P;  // the window's corner, maybe in the padding
        const int64_t hlo = h0 < 0 ? 0 : h0, hhi = h0 + KS < H ? h0 + KS : H;
        const int64_t wlo = w0 < 0 ? 0 : w0, whi = w0 + KS < W ? w0 + KS : W;
        float low = xGm.GetValue((plane * H + hlo) * W + wlo);  // padded positions never win: leave them out
        for (int64_t h = hlo; h < hhi; ++h) {
            for (int64_t w = wlo; w < whi; ++w) {
                const float v = xGm.GetValue((plane * H + h) * W + w);
                low = v < low ? v : low;
            }
        }
        outGm.SetValue(i, low);
    }
}
