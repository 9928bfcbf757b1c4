// rung: first
// task: r22_ArgmaxAbsOverDim
// summary: first rung, row reduction over a given dim to an int64 index, rank 3 to rank 2: outer x inner output elements, one plain loop over the reduced axis each keeping the first best
#include <cmath>
#include <cstdint>

extern "C" void kernel(const float* x, int64_t* out, int64_t dim, int64_t x_d0, int64_t x_d1, int64_t x_d2, int64_t out_d0, int64_t out_d1) {
    const int64_t sizes[3] = {x_d0, x_d1, x_d2};
    const int64_t axis = dim < 0 ? dim + 3 : dim;  // a negative dim counts from the end
    int64_t outer = 1, inner = 1;  // the dims before the reduced one, and after it
    for (int64_t a = 0; a < axis; ++a) outer *= sizes[a];
    for (int64_t a = axis + 1; a < 3; ++a) inner *= sizes[a];
    const int64_t len = sizes[axis];
    for (int64_t o = 0; o < outer; ++o) {
        for (int64_t i = 0; i < inner; ++i) {
            int64_t best = 0;
            float bestValue = std::fabs(x[o * len * inner + i]);
            for (int64_t k = 1; k < len; ++k) {
                const float v = std::fabs(x[(o * len + k) * inner + i]);
                if (v > bestValue) {  // strictly greater: the first position wins a tie
                    bestValue = v;
                    best = k;
                }
            }
            out[o * inner + i] = best;
        }
    }
}
