// tensors: 2
// expect-fault: block-race
// each block stores its share, then reads the element before it (the previous block's last)
// with no SyncAll between: on a device the other block may not have written it yet
using namespace AscendC;

extern "C" __global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR out, GM_ADDR workspace, GM_ADDR tiling)
{
    TestTiling t = ReadTiling(tiling);
    const int64_t per = t.n[0] / GetBlockNum();
    __gm__ float* src = (__gm__ float*)x + GetBlockIdx() * per;
    __gm__ float* dst = (__gm__ float*)out + GetBlockIdx() * per;
    for (int64_t i = 0; i < per; ++i) dst[i] = src[i];
    if (GetBlockIdx() > 0) {
        const float before = dst[-1];  // FAULT
        dst[0] = dst[0] + before;
    }
}
