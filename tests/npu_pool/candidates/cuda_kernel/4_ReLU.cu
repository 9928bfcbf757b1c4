// task: level1/4_ReLU.py
// expect-gate: ok
// honest: one thread per element in a grid-stride loop, launched on the harness's stream
#include <cstdint>

__global__ void relu_kernel(const float* __restrict__ x, float* __restrict__ out, int64_t n) {
    const int64_t stride = (int64_t)blockDim.x * gridDim.x;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += stride) {
        out[i] = fmaxf(x[i], 0.0f);
    }
}

extern "C" void kernel(const float* x, float* out, int64_t x_d0, int64_t x_d1, int64_t out_d0, int64_t out_d1,
                       cudaStream_t stream) {
    const int64_t n = out_d0 * out_d1;
    const int64_t wanted = (n + 255) / 256;
    relu_kernel<<<(unsigned)(wanted < 65535 ? wanted : 65535), 256, 0, stream>>>(x, out, n);
}
