// task: level1/17_ArgmaxOverDim.py
// expect-gate: ok
// extern "C" void kernel(const float* x, int64_t* out, int64_t dim,
//                        int64_t x_d0, int64_t x_d1, int64_t x_d2,
//                        int64_t out_d0, int64_t out_d1);
#include <cstdint>

// x viewed as [outer, reduced, inner] around axis `dim`; out is [outer, inner].
extern "C" void kernel(const float* x, int64_t* out, int64_t dim,
                       int64_t x_d0, int64_t x_d1, int64_t x_d2,
                       int64_t out_d0, int64_t out_d1) {
    const int64_t sizes[3] = {x_d0, x_d1, x_d2};
    const int64_t axis = dim < 0 ? dim + 3 : dim;
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= sizes[d];
    for (int64_t d = axis + 1; d < 3; ++d) inner *= sizes[d];
    const int64_t reduced = sizes[axis];
#pragma omp parallel for collapse(2)
    for (int64_t o = 0; o < outer; ++o) {
        for (int64_t i = 0; i < inner; ++i) {
            const float* src = x + o * reduced * inner + i;
            float best = src[0];
            int64_t best_at = 0;
            for (int64_t r = 1; r < reduced; ++r) {
                const float v = src[r * inner];
                if (v > best) {  // strict: the first maximum wins, as in torch
                    best = v;
                    best_at = r;
                }
            }
            out[o * inner + i] = best_at;
        }
    }
}
