#include <cmath>
#include <algorithm>

extern "C" void kernel(
    const float* x,  // input, float32 [x_d0 x x_d1] (now 128x4096)
    float* out,      // output, float32 [out_d0 x out_d1] (now 128x4096)
    int64_t dim,     // constructor argument dim (now 1)
    int64_t x_d0,    // size of dimension 0 of x (now 128)
    int64_t x_d1,    // size of dimension 1 of x (now 4096)
    int64_t out_d0,  // size of dimension 0 of out (now 128)
    int64_t out_d1   // size of dimension 1 of out (now 4096)
) {
    const int64_t axis = dim < 0 ? dim + 2 : dim;
    const int64_t lines = axis == 1 ? x_d0 : x_d1;  // independent scans
    const int64_t len = axis == 1 ? x_d1 : x_d0;    // elements in one scan
    const int64_t step = axis == 1 ? 1 : x_d1;      // distance between neighbours in a scan
    const int64_t gap = axis == 1 ? x_d1 : 1;       // distance between the starts of two scans
#pragma omp parallel for schedule(static)
    for (int64_t l = 0; l < lines; ++l) {
        double acc = 0.0;
        for (int64_t i = 0; i < len; ++i) {
            const int64_t at = l * gap + i * step;
            acc += x[at];
            out[at] = static_cast<float>(acc);
        }
    }
}
