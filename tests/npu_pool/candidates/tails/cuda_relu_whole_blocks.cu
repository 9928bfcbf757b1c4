// task: level1/4_ReLU.py
// expect-gate: correctness
// (at the second size: right at the task's own, friendly size)
// WRONG at a size that is no multiple of 256: launches n / 256 blocks (the remainder dropped)
// and no thread checks its index against n, so the last, partial block is never written.
#include <cstdint>

__global__ void relu_kernel(const float* __restrict__ x, float* __restrict__ out) {
    const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    out[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

extern "C" void kernel(const float* x, float* out, int64_t x_d0, int64_t x_d1, int64_t out_d0, int64_t out_d1,
                       cudaStream_t stream) {
    const int64_t n = x_d0 * x_d1;
    if (n >= 256) relu_kernel<<<(unsigned)(n / 256), 256, 0, stream>>>(x, out);
}
