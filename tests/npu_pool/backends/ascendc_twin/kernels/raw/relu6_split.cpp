// tensors: 2
// expect: ok
// ReLU6 through raw __gm__ pointers, the work split over blocks: the first (total % blocks)
// blocks take one element more, so every element is stored by exactly one block
using namespace AscendC;

extern "C" __global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR out, GM_ADDR workspace, GM_ADDR tiling)
{
    TestTiling t = ReadTiling(tiling);
    const int64_t total = t.n[0], blocks = GetBlockNum(), b = GetBlockIdx();
    const int64_t base = total / blocks, extra = total % blocks;
    const int64_t begin = b * base + (b < extra ? b : extra);
    const int64_t count = base + (b < extra ? 1 : 0);
    __gm__ const float* src = reinterpret_cast<__gm__ const float*>(x) + begin;
    __gm__ float* dst = reinterpret_cast<__gm__ float*>(out) + begin;
    for (int64_t i = 0; i < count; ++i) dst[i] = fmaxf(fminf(src[i], 6.0f), 0.0f);
}
