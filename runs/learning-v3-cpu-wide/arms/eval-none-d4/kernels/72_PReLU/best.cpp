#include <cmath>
#include <cstdint>

extern "C" void kernel(
    const float* x,             // input, float32 [x_d0 x x_d1] (now 128x16384)
    const float* prelu_weight,  // parameter, float32 [prelu.weight_d0] (now 1)
    float* out,                 // output, float32 [out_d0 x out_d1] (now 128x16384)
    double init,                // constructor argument init (now 0.2)
    int64_t x_d0,               // size of dimension 0 of x (now 128)
    int64_t x_d1,               // size of dimension 1 of x (now 16384)
    int64_t prelu_weight_d0,    // size of dimension 0 of prelu_weight (now 1)
    int64_t out_d0,             // size of dimension 0 of out (now 128)
    int64_t out_d1              // size of dimension 1 of out (now 16384)
) {
    const float slope = static_cast<float>(init);
    const int64_t n = out_d0 * out_d1;
    #pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) {
        out[i] = x[i] >= 0 ? x[i] : slope * x[i];
    }
}
