// tensors: 2
// expect-fault: stale-cache
// partials_syncall without DataCacheCleanAndInvalid: each block's raw store of its partial sits
// in its core's data cache, so block 0 reads stale values after SyncAll on a device
using namespace AscendC;

extern "C" __global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR out, GM_ADDR workspace, GM_ADDR tiling)
{
    TestTiling t = ReadTiling(tiling);
    const int64_t total = t.n[0], blocks = GetBlockNum(), b = GetBlockIdx();
    const int64_t per = (total + blocks - 1) / blocks;
    const int64_t begin = b * per, end = begin + per < total ? begin + per : total;
    __gm__ float* src = (__gm__ float*)x;
    __gm__ float* dst = (__gm__ float*)out;
    float sum = 0.0f;
    for (int64_t i = begin; i < end; ++i) sum += src[i];
    dst[1 + b] = sum;
    SyncAll();
    if (b == 0) {
        float all = 0.0f;
        for (int64_t k = 0; k < blocks; ++k) all += dst[1 + k];  // FAULT
        dst[0] = all;
    }
}
