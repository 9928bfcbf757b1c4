// task: level1/4_ReLU.py
// expect-gate: runtime
// broken: 2048 threads per block is an invalid launch configuration; the launch check reports it
#include <cstdint>

__global__ void relu_kernel(const float* x, float* out, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) out[i] = fmaxf(x[i], 0.0f);
}

extern "C" void kernel(const float* x, float* out, int64_t x_d0, int64_t x_d1, int64_t out_d0, int64_t out_d1,
                       cudaStream_t stream) {
    const int64_t n = out_d0 * out_d1;
    relu_kernel<<<(unsigned)((n + 2047) / 2048), 2048, 0, stream>>>(x, out, n);
}
