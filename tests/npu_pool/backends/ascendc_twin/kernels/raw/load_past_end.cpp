// tensors: 2
// expect-fault: gm-bounds
// a forward difference that reads x[i + 1] for the last element too
using namespace AscendC;

extern "C" __global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR out, GM_ADDR workspace, GM_ADDR tiling)
{
    TestTiling t = ReadTiling(tiling);
    const float* src = reinterpret_cast<const float*>(x);
    float* dst = reinterpret_cast<float*>(out);
    for (int64_t i = 0; i < t.n[0]; ++i) {
        const float next = src[i + 1];  // FAULT
        dst[i] = next - src[i];
    }
}
