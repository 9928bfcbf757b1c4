extern "C" void kernel(const float* A, const float* B, float* out, int64_t A_d0, int64_t A_d1, int64_t B_d0, int64_t B_d1, int64_t out_d0, int64_t out_d1) {
    const int64_t M = A_d0;
    const int64_t K = A_d1;
    const int64_t N = B_d1;
    const int64_t m = out_d0;
    const int64_t n = out_d1;

    float acc = 0.0f;
    #pragma omp parallel for collapse(2)
    for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
            acc = 0.0f;
            for (int64_t k = 0; k < K; ++k) {
                acc += A[i * K + k] * B[k * N + j];
            }
            out[i * n + j] = acc;
        }
    }
}
