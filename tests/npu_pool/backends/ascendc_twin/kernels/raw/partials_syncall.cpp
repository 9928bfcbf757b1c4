// tensors: 2
// expect: ok
// each block sums its share into out[1 + block] through a raw pointer; after SyncAll block 0
// reads every partial and stores the total in out[0] (the barrier orders the stores before;
// DataCacheCleanAndInvalid writes each block's scalar store out of its core's data cache)
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
    GlobalTensor<float> mine;
    mine.SetGlobalBuffer(dst + 1 + b, 1);
    DataCacheCleanAndInvalid<float, CacheLine::SINGLE_CACHE_LINE, DcciDst::CACHELINE_OUT>(mine);
    SyncAll();
    if (b == 0) {
        float all = 0.0f;
        for (int64_t k = 0; k < blocks; ++k) all += dst[1 + k];
        dst[0] = all;
    }
}
