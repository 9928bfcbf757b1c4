#include <cmath>
#include <cstdint>

extern "C" void kernel(
    const float* x,  // input, float32 [x_d0 x x_d1 x x_d2] (now 32x256x256)
    float* out,      // output, float32 [out_d0 x out_d1] (now 32x256)
    int64_t dim,     // constructor argument dim (now 2)
    int64_t x_d0,    // size of dimension 0 of x (now 32)
    int64_t x_d1,    // size of dimension 1 of x (now 256)
    int64_t x_d2,    // size of dimension 2 of x (now 256)
    int64_t out_d0,  // size of dimension 0 of out (now 32)
    int64_t out_d1   // size of dimension 1 of out (now 256)
) {
    const int64_t sizes[3] = {x_d0, x_d1, x_d2};
    const int64_t axis = dim < 0 ? dim + 3 : dim;  // torch allows negative axes
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= sizes[d];
    for (int64_t d = axis + 1; d < 3; ++d) inner *= sizes[d];
    const int64_t reduced = sizes[axis];

#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t o = 0; o < outer; ++o) {
        for (int64_t i = 0; i < inner; ++i) {
            double acc = 0.0;
            for (int64_t r = 0; r < reduced; ++r) acc += x[(o * reduced + r) * inner + i];
            out[o * inner + i] = static_cast<float>(acc / static_cast<double>(reduced));
        }
    }
}
