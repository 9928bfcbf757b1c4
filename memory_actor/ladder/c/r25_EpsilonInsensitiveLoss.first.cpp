// rung: first
// task: r25_EpsilonInsensitiveLoss
// summary: first rung, row reduction of two rank-2 inputs to one scalar with a constructor scalar: one plain loop over every element, a double sum
#include <cmath>
#include <cstdint>

extern "C" void kernel(const float* predictions, const float* targets, float* out, double epsilon, int64_t predictions_d0, int64_t predictions_d1, int64_t targets_d0, int64_t targets_d1) {
    const int64_t n = predictions_d0 * predictions_d1;  // contiguous: one flat index walks every element
    double sum = 0.0;  // double: a long float sum drifts past the 1e-4 tolerance
    for (int64_t i = 0; i < n; ++i) {
        const double excess = std::fabs((double)predictions[i] - (double)targets[i]) - epsilon;
        sum += excess > 0.0 ? excess : 0.0;
    }
    out[0] = (float)(sum / (double)n);  // the 0-d output is one element
}
