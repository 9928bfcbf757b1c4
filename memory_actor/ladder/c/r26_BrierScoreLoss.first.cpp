// rung: first
// task: r26_BrierScoreLoss
// summary: first rung, softmax/normalisation family, two rank-2 inputs to a 0-d loss: per row a max pass, an exp-sum pass and a pass comparing with the targets, one double total
#include <cmath>
#include <cstdint>

extern "C" void kernel(const float* logits, const float* targets, float* out, int64_t logits_d0, int64_t logits_d1, int64_t targets_d0, int64_t targets_d1) {
    const int64_t rows = logits_d0, cols = logits_d1;
    double total = 0.0;  // double: a long float sum drifts past the 1e-4 tolerance
    for (int64_t r = 0; r < rows; ++r) {
        const float* row = logits + r * cols;
        float high = row[0];  // subtract the row's largest logit: exp never overflows
        for (int64_t c = 1; c < cols; ++c) {
            if (row[c] > high) high = row[c];
        }
        double sum = 0.0;
        for (int64_t c = 0; c < cols; ++c) {
            sum += std::exp((double)row[c] - high);
        }
        double rowTotal = 0.0;
        for (int64_t c = 0; c < cols; ++c) {
            const double p = std::exp((double)row[c] - high) / sum;  // softmax probability
            const double d = p - (double)targets[r * cols + c];
            rowTotal += d * d;
        }
        total += rowTotal;
    }
    out[0] = (float)(total / (double)rows);  // the mean over rows; the 0-d output is one element
}
