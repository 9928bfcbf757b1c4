// tensors: 2
// expect: ok
// v3's ReLU6 written right: plain (float*) casts, chunks of 8-element multiples per block, the
// last chunk clamped to the tensor's end (a block past the end does nothing); the input read
// through a GlobalTensor's address
using namespace AscendC;

extern "C" __global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR out, GM_ADDR workspace, GM_ADDR tiling)
{
    TestTiling t = ReadTiling(tiling);
    const int64_t total = t.n[0];
    const int64_t per = ((total + GetBlockNum() - 1) / GetBlockNum() + 7) / 8 * 8;
    const int64_t begin = GetBlockIdx() * per;
    const int64_t end = begin + per < total ? begin + per : total;
    GlobalTensor<float> xGm;
    xGm.SetGlobalBuffer((__gm__ float*)x, total);
    float* x_ptr = (float*)xGm.GetPhyAddr();
    float* out_ptr = (float*)out;
    for (int64_t off = begin; off < end; off += 1) out_ptr[off] = fmaxf(fminf(x_ptr[off], 6.0f), 0.0f);
}
