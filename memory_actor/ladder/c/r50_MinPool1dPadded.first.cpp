// rung: first
// task: r50_MinPool1dPadded
// summary: first rung, pooling/window family, rank 3 with kernel_size, stride and padding: one plain loop per output element over the window's in-range part
#include <cstdint>

extern "C" void kernel(const float* x, float* out, int64_t kernel_size, int64_t stride, int64_t padding,
                       int64_t x_d0, int64_t x_d1, int64_t x_d2, int64_t out_d0, int64_t out_d1, int64_t out_d2) {
    const int64_t lines = x_d0 * x_d1, L = x_d2, OL = out_d2;  // a line: one (batch, channel)
    for (int64_t line = 0; line < lines; ++line) {
        for (int64_t o = 0; o < OL; ++o) {
            const int64_t start = o * stride - padding;  // may lie in the padding
            const int64_t lo = start < 0 ? 0 : start;  // padded positions never win: leave them out
            const int64_t hi = start + kernel_size < L ? start + kernel_size : L;
            float low = x[line * L + lo];
            for (int64_t p = lo + 1; p < hi; ++p) {
                const float v = x[line * L + p];
                if (v < low) low = v;
            }
            out[line * OL + o] = low;
        }
    }
}
