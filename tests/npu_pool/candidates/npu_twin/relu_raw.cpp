// task: level1/4_ReLU.py
// expect-gate: ok
// Correct, but every element is read and written through raw __gm__ pointers on the scalar unit:
// the twin's API counters never see that traffic, so the backend charges it as scalar
// global-memory accesses (the slowest kind on a device).
using namespace AscendC;

extern "C" __global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR out, GM_ADDR workspace, GM_ADDR tiling)
{
    KernelTiling t;
    CopyTiling(&t, tiling);
    const int64_t total = t.x_d0 * t.x_d1;
    const int64_t per = (total + GetBlockNum() - 1) / GetBlockNum();
    const int64_t begin = GetBlockIdx() * per;
    const int64_t end = begin + per < total ? begin + per : total;
    __gm__ float* in = (__gm__ float*)x;
    __gm__ float* dst = (__gm__ float*)out;
    for (int64_t i = begin; i < end; ++i) {
        dst[i] = in[i] > 0.0f ? in[i] : 0.0f;
    }
}
