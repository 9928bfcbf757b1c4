// rung: first
// task: r54_SumPool2d
// summary: first rung, pooling/window family, rank 4 with kernel_size and stride (no padding): one plain loop per output element, a double sum
#include <cstdint>

extern "C" void kernel(const float* x, float* out, int64_t kernel_size, int64_t stride,
                       int64_t x_d0, int64_t x_d1, int64_t x_d2, int64_t x_d3,
                       int64_t out_d0, int64_t out_d1, int64_t out_d2, int64_t out_d3) {
    const int64_t planes = x_d0 * x_d1, H = x_d2, W = x_d3, OH = out_d2, OW = out_d3;  // a plane: one (batch, channel)
    for (int64_t plane = 0; plane < planes; ++plane) {
        for (int64_t oh = 0; oh < OH; ++oh) {
            for (int64_t ow = 0; ow < OW; ++ow) {
                double sum = 0.0;
                for (int64_t kh = 0; kh < kernel_size; ++kh) {
                    for (int64_t kw = 0; kw < kernel_size; ++kw) {
                        sum += x[(plane * H + oh * stride + kh) * W + ow * stride + kw];
                    }
                }
                out[(plane * OH + oh) * OW + ow] = (float)sum;
            }
        }
    }
}
