// rung: first
// task: r53_MinPool2dPadded
// summary: first rung, pooling/window family, rank 4 with kernel_size, stride and padding: one plain loop per output element over the window's in-range part
#include <cstdint>

extern "C" void kernel(const float* x, float* out, int64_t kernel_size, int64_t stride, int64_t padding,
                       int64_t x_d0, int64_t x_d1, int64_t x_d2, int64_t x_d3,
                       int64_t out_d0, int64_t out_d1, int64_t out_d2, int64_t out_d3) {
    const int64_t planes = x_d0 * x_d1, H = x_d2, W = x_d3, OH = out_d2, OW = out_d3;  // a plane: one (batch, channel)
    for (int64_t plane = 0; plane < planes; ++plane) {
        for (int64_t oh = 0; oh < OH; ++oh) {
            for (int64_t ow = 0; ow < OW; ++ow) {
                const int64_t h0 = oh * stride - padding, w0 = ow * stride - padding;  // maybe in the padding
                const int64_t hlo = h0 < 0 ? 0 : h0, hhi = h0 + kernel_size < H ? h0 + kernel_size : H;
                const int64_t wlo = w0 < 0 ? 0 : w0, whi = w0 + kernel_size < W ? w0 + kernel_size : W;
                float low = x[(plane * H + hlo) * W + wlo];  // padded positions never win: leave them out
                for (int64_t h = hlo; h < hhi; ++h) {
                    for (int64_t w = wlo; w < whi; ++w) {
                        const float v = x[(plane * H + h) * W + w];
                        if (v < low) low = v;
                    }
                }
                out[(plane * OH + oh) * OW + ow] = low;
            }
        }
    }
}
