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

    // Compute LeakyReLU elementwise
    for (int64_t off = 0; off < total_out; off += 1) {
        float x_val = x_ptr[off];
        out_ptr[off] = x_val >= 0.0f ? x_val : t.negative_slope * x_val;
    }
}
