// rung: double_buffer
// task: ex1_Log1pAbs
// summary: double-buffered rung, elementwise family: ex1_Log1pAbs, the vector rung's tile loop through two-buffer TQue pairs (the next copy-in overlaps this tile's compute and copy-out)
using namespace AscendC;
constexpr int64_t TILE = 4096;  // floats per tile: 16 KiB of UB, two per queue
constexpr int64_t SLICE = 8;    // floats in 32 bytes: each block's share starts 32-byte aligned

extern "C" __global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR out, GM_ADDR workspace, GM_ADDR tiling)
{
    KernelTiling t;
    CopyTiling(&t, tiling);
    const int64_t total = t.out_d0 * t.out_d1;
    const int64_t per = ((total + GetBlockNum() - 1) / GetBlockNum() + SLICE - 1) / SLICE * SLICE;  // this block's share
    const int64_t begin = per * GetBlockIdx();
    const int64_t end = begin + per < total ? begin + per : total;  // the last block's share ends at the tail
    GlobalTensor<float> xGm, outGm;
    xGm.SetGlobalBuffer((__gm__ float*)x, total);
    outGm.SetGlobalBuffer((__gm__ float*)out, total);
    TPipe pipe;
    TQue<TPosition::VECIN, 2> inQ;  // 2 buffers: the queues carry the flags between the pipes
    TQue<TPosition::VECOUT, 2> outQ;
    pipe.InitBuffer(inQ, 2, TILE * sizeof(float));
    pipe.InitBuffer(outQ, 2, TILE * sizeof(float));
    for (int64_t off = begin; off < end; off += TILE) {
        const int64_t n = end - off < TILE ? end - off : TILE;  // the tail tile is shorter
        DataCopyExtParams copy{1, (uint32_t)(n * sizeof(float)), 0, 0, 0};
        LocalTensor<float> a = inQ.AllocTensor<float>();
        DataCopyPad(a, xGm[off], copy, DataCopyPadExtParams<float>{false, 0, 0, 0.0f});
        inQ.EnQue(a);  // copy-in -> vector
        a = inQ.DeQue<float>();
        LocalTensor<float> c = outQ.AllocTensor<float>();
        Abs(c, a, (int32_t)n);         // |x|
        Adds(c, c, 1.0f, (int32_t)n);  // 1 + |x|
        Ln(c, c, (int32_t)n);          // log(1 + |x|)
        outQ.EnQue(c);  // vector -> copy-out
        inQ.FreeTensor(a);
        c = outQ.DeQue<float>();
        DataCopyPad(outGm[off], c, copy);
        outQ.FreeTensor(c);
    }
}
