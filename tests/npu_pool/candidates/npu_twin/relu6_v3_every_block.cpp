// task: level1/45_ReLU6.py
// expect-gate: runtime
// v3's feasible 45_ReLU6 kernel, as published in bench/results/2026-11-28-qwen2.5-coder-1.5b-instruct-v3-npu-twin
// (raw.tar.xz: arms/learn-value/kernels/45_ReLU6/best.cpp), unchanged below this header. Every block runs
// the scalar loop over the whole tensor through raw pointers, so every core writes every element:
// a device's memcheck reports several cores writing the same global memory; the twin, block-overlap.
using namespace AscendC;

extern "C" __global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR out, GM_ADDR workspace, GM_ADDR tiling)
{
    KernelTiling t;
    CopyTiling(&t, tiling);
    
    // Assuming x and out are already aligned and have 192 KiB of UB for each element
    float* x_ptr = (float*)x;
    float* out_ptr = (float*)out;
    int64_t total_x = t.x_d0 * t.x_d1;
    int64_t total_out = t.out_d0 * t.out_d1;

    // Compute ReLU6 elementwise
    for (int64_t off = 0; off < total_out; off += 1) {
        float x_val = x_ptr[off];
        out_ptr[off] = fmaxf(fminf(x_val, 6.0f), 0.0f);
    }
}
