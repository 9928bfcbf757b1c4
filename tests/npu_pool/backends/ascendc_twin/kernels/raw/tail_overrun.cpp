// tensors: 2
// expect-fault: gm-bounds
// the work split over blocks in chunks rounded up to 8 elements, the last chunk not clamped
// to the tensor's end: the last block stores past the output
using namespace AscendC;

extern "C" __global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR out, GM_ADDR workspace, GM_ADDR tiling)
{
    TestTiling t = ReadTiling(tiling);
    const int64_t per = ((t.n[0] + GetBlockNum() - 1) / GetBlockNum() + 7) / 8 * 8;
    __gm__ float* src = (__gm__ float*)x + GetBlockIdx() * per;
    __gm__ float* dst = (__gm__ float*)out + GetBlockIdx() * per;
    for (int64_t i = 0; i < per; ++i) {
        const float v = GetBlockIdx() * per + i < t.n[0] ? src[i] : 0.0f;
        dst[i] = v * 2.0f;  // FAULT
    }
}
