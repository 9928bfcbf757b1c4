using namespace AscendC;

extern "C" __global__ __aicore__ void kernel(
    GM_ADDR A,          // input, float32 [A_d0 x A_d1] (now 2048x2048)
    GM_ADDR v,          // input, float32 [v_d0 x v_d1] (now 2048x1)
    GM_ADDR out,        // output, float32 [out_d0 x out_d1] (now 2048x1)
    GM_ADDR workspace,  // 16 MiB scratch (SetSysWorkspace(workspace) before Matmul)
    GM_ADDR tiling      // KernelTiling in global memory
)
{
    KernelTiling t;
    CopyTiling(&t, tiling);
    
    // Assuming x and out are already aligned and have 192 KiB of UB for each element
    float* A_ptr = (float*)A;
    float* v_ptr = (float*)v;
    float* out_ptr = (float*)out;
    int64_t total_A = t.A_d0 * t.A_d1;
    int64_t total_v = t.v_d0 * t.v_d1;
    int64_t total_out = t.out_d0 * t.out_d1;

    // Compute A @ v elementwise
    for (int64_t off = 0; off < total_out; off += 1) {
        float sum = 0.0f;
        for (int64_t i = 0; i < t.A_d1; i++) {
            sum += A_ptr[off * t.A_d1 + i] * v_ptr[i];
        }
        out_ptr[off] = sum;
    }
}
