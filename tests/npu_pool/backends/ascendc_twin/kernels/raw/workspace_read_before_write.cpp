// tensors: 2
// expect-fault: uninit-read
// each block accumulates into its share of the workspace through a raw pointer, reading each
// element before anything wrote it (the workspace is not cleared: it holds what an earlier
// kernel left), then copies it out; raw workspace accesses are checked one by one, so the read
// before the write in the same loop is found
using namespace AscendC;

extern "C" __global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR out, GM_ADDR workspace, GM_ADDR tiling)
{
    TestTiling t = ReadTiling(tiling);
    const int64_t per = t.n[0] / GetBlockNum();
    __gm__ float* src = (__gm__ float*)x + GetBlockIdx() * per;
    __gm__ float* acc = (__gm__ float*)workspace + GetBlockIdx() * per;
    __gm__ float* dst = (__gm__ float*)out + GetBlockIdx() * per;
    for (int64_t i = 0; i < per; ++i) {
        const float before = acc[i];  // FAULT
        acc[i] = before + src[i];
    }
    for (int64_t i = 0; i < per; ++i) dst[i] = acc[i];
}
