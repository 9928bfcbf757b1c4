// task: level1/31_MaxPool2d.py
// expect-gate: ok
// extern "C" void kernel(const float* x, float* out, int64_t kernel_size, int64_t stride,
//                        int64_t padding, int64_t x_d0, int64_t x_d1, int64_t x_d2,
//                        int64_t x_d3, int64_t out_d0, int64_t out_d1, int64_t out_d2,
//                        int64_t out_d3);
#include <cstdint>
#include <limits>

extern "C" void kernel(const float* x, float* out, int64_t kernel_size, int64_t stride,
                       int64_t padding, int64_t x_d0, int64_t x_d1, int64_t x_d2,
                       int64_t x_d3, int64_t out_d0, int64_t out_d1, int64_t out_d2,
                       int64_t out_d3) {
    const int64_t planes = x_d0 * x_d1, H = x_d2, W = x_d3, OH = out_d2, OW = out_d3;
#pragma omp parallel for
    for (int64_t p = 0; p < planes; ++p) {
        const float* src = x + p * H * W;
        float* dst = out + p * OH * OW;
        for (int64_t oh = 0; oh < OH; ++oh) {
            for (int64_t ow = 0; ow < OW; ++ow) {
                float best = -std::numeric_limits<float>::infinity();
                for (int64_t kh = 0; kh < kernel_size; ++kh) {
                    const int64_t h = oh * stride - padding + kh;
                    if (h < 0 || h >= H) continue;
                    for (int64_t kw = 0; kw < kernel_size; ++kw) {
                        const int64_t w = ow * stride - padding + kw;
                        if (w < 0 || w >= W) continue;
                        const float v = src[h * W + w];
                        best = v > best ? v : best;
                    }
                }
                dst[oh * OW + ow] = best;
            }
        }
    }
}
