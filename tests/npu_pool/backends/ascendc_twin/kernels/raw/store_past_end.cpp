// tensors: 2
// expect-fault: gm-bounds
// one block, a loop bound off by one: the last store lands one element past the output
using namespace AscendC;

extern "C" __global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR out, GM_ADDR workspace, GM_ADDR tiling)
{
    TestTiling t = ReadTiling(tiling);
    __gm__ float* src = reinterpret_cast<__gm__ float*>(x);
    __gm__ float* dst = reinterpret_cast<__gm__ float*>(out);
    for (int64_t i = 0; i <= t.n[0]; ++i) {
        const float v = i < t.n[0] ? src[i] : 0.0f;
        dst[i] = v > 0.0f ? v : 0.0f;  // FAULT
    }
}
