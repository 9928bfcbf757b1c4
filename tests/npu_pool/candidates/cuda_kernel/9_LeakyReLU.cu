// task: level1/9_LeakyReLU.py
// expect-gate: ok
// honest: the bundle's elementwise template (bench/harness.py's CUDA case)
#include <cstdint>

__global__ void leaky_relu_kernel(const float* __restrict__ x, float* __restrict__ out, float slope, int64_t n) {
    const int64_t stride = (int64_t)blockDim.x * gridDim.x;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += stride) {
        const float v = x[i];
        out[i] = v >= 0.0f ? v : v * slope;
    }
}

extern "C" void kernel(const float* x, float* out, double negative_slope,
                       int64_t x_d0, int64_t x_d1, int64_t out_d0, int64_t out_d1, cudaStream_t stream) {
    const int64_t n = out_d0 * out_d1;
    const int64_t wanted = (n + 255) / 256;
    leaky_relu_kernel<<<(unsigned)(wanted < 4096 ? wanted : 4096), 256, 0, stream>>>(x, out, (float)negative_slope, n);
}
