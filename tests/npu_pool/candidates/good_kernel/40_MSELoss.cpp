// task: level1/40_MSELoss.py
// expect-gate: ok
// extern "C" void kernel(const float* predictions, const float* targets, float* out,
//                        int64_t predictions_d0, int64_t predictions_d1,
//                        int64_t targets_d0, int64_t targets_d1);
#include <cstdint>

// `out` is 0-d: a single float.
extern "C" void kernel(const float* predictions, const float* targets, float* out,
                       int64_t predictions_d0, int64_t predictions_d1,
                       int64_t targets_d0, int64_t targets_d1) {
    const int64_t n = predictions_d0 * predictions_d1;
    double total = 0.0;
#pragma omp parallel for reduction(+ : total)
    for (int64_t i = 0; i < n; ++i) {
        const double d = static_cast<double>(predictions[i]) - targets[i];
        total += d * d;
    }
    out[0] = static_cast<float>(total / n);
}
