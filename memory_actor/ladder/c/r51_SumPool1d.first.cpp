// rung: first
// task: r51_SumPool1d
// summary: first rung, pooling/window family, rank 3 with kernel_size only (stride = kernel_size, no padding): one plain loop per output element, a double sum
#include <cstdint>

extern "C" void kernel(const float* x, float* out, int64_t kernel_size,
                       int64_t x_d0, int64_t x_d1, int64_t x_d2, int64_t out_d0, int64_t out_d1, int64_t out_d2) {
    const int64_t lines = x_d0 * x_d1, L = x_d2, OL = out_d2;  // a line: one (batch, channel)
    for (int64_t line = 0; line < lines; ++line) {
        for (int64_t o = 0; o < OL; ++o) {
            double sum = 0.0;
            for (int64_t k = 0; k < kernel_size; ++k) {
                sum += x[line * L + o * kernel_size + k];  // the window starts at o * kernel_size
            }
            out[line * OL + o] = (float)sum;
        }
    }
}
