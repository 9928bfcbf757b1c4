// task: level1/32_AvgPool1d.py
// expect-gate: ok
// extern "C" void kernel(const float* x, float* out, int64_t kernel_size, int64_t stride,
//                        int64_t padding, int64_t x_d0, int64_t x_d1, int64_t x_d2,
//                        int64_t out_d0, int64_t out_d1, int64_t out_d2);
#include <cstdint>

// Padded positions count as zeros: the divisor is always kernel_size (count_include_pad).
extern "C" void kernel(const float* x, float* out, int64_t kernel_size, int64_t stride,
                       int64_t padding, int64_t x_d0, int64_t x_d1, int64_t x_d2,
                       int64_t out_d0, int64_t out_d1, int64_t out_d2) {
    const int64_t rows = x_d0 * x_d1, L = x_d2, OL = out_d2;
    const float inv = 1.0f / static_cast<float>(kernel_size);
#pragma omp parallel for
    for (int64_t r = 0; r < rows; ++r) {
        const float* src = x + r * L;
        float* dst = out + r * OL;
        for (int64_t o = 0; o < OL; ++o) {
            float acc = 0.0f;
            for (int64_t k = 0; k < kernel_size; ++k) {
                const int64_t at = o * stride - padding + k;
                if (at >= 0 && at < L) acc += src[at];
            }
            dst[o] = acc * inv;
        }
    }
}
