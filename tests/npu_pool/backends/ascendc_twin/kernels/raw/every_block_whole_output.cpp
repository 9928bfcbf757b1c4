// tensors: 2
// expect-fault: block-overlap
// v3's 45_ReLU6 (bench/results/2026-11-28-qwen2.5-coder-1.5b-instruct-v3-npu-twin, learn-value
// arm, best.cpp), reduced to this suite's tiling: a scalar loop over raw pointers that every
// block runs over the whole tensor, so every core writes every element of the output.
using namespace AscendC;

extern "C" __global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR out, GM_ADDR workspace, GM_ADDR tiling)
{
    TestTiling t = ReadTiling(tiling);
    float* x_ptr = (float*)x;
    float* out_ptr = (float*)out;
    int64_t total_out = t.n[0];
    for (int64_t off = 0; off < total_out; off += 1) {
        float x_val = x_ptr[off];
        out_ptr[off] = fmaxf(fminf(x_val, 6.0f), 0.0f);  // FAULT
    }
}
