// task: level1/4_ReLU.py
// expect-gate: correctness
// hack: copies the input to the output (KernelBench's "return the input"): negatives stay negative
#include <cstdint>

extern "C" void kernel(const float* x, float* out, int64_t x_d0, int64_t x_d1, int64_t out_d0, int64_t out_d1,
                       cudaStream_t stream) {
    cudaMemcpyAsync(out, x, (size_t)(x_d0 * x_d1) * sizeof(float), cudaMemcpyDeviceToDevice, stream);
}
