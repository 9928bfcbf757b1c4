// tensors: 2
// expect-fault: gm-readonly
// computes in place in the input, then copies it out
using namespace AscendC;

extern "C" __global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR out, GM_ADDR workspace, GM_ADDR tiling)
{
    TestTiling t = ReadTiling(tiling);
    __gm__ float* src = (__gm__ float*)x;
    __gm__ float* dst = (__gm__ float*)out;
    for (int64_t i = GetBlockIdx(); i < t.n[0]; i += GetBlockNum()) {
        src[i] = src[i] * 2.0f;  // FAULT
        dst[i] = src[i];
    }
}
