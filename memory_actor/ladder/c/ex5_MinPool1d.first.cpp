// rung: first
// task: ex5_MinPool1d
// summary: first rung, pooling/window family: ex5_MinPool1d, one plain loop per output element
#include <cstdint>

const int64_t WINDOW = 4;  // the reference's kernel_size
const int64_t STRIDE = 2;  // the reference's stride

extern "C" void kernel(const float* x, float* out, int64_t x_d0, int64_t x_d1, int64_t x_d2,
                       int64_t out_d0, int64_t out_d1, int64_t out_d2) {
    const int64_t lines = x_d0 * x_d1, L = x_d2, OL = out_d2;  // a line: one (batch, channel)
    for (int64_t line = 0; line < lines; ++line) {
        for (int64_t o = 0; o < OL; ++o) {
            float low = x[line * L + o * STRIDE];
            for (int64_t k = 1; k < WINDOW; ++k) {
                const float v = x[line * L + o * STRIDE + k];
                if (v < low) low = v;
            }
            out[line * OL + o] = low;
        }
    }
}
