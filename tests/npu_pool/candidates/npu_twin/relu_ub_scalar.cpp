// task: level1/4_ReLU.py
// expect-gate: ok
// Correct: tiles copied through UB (DataCopyPad), the formula on the scalar unit element by
// element (LocalTensor GetValue/SetValue), flag pairs between the pipes. The cost model's
// middle form: no scalar round trip to global memory, no vector instruction.
using namespace AscendC;
constexpr int64_t TILE = 4096;  // floats per tile: 16 KiB of UB
constexpr int64_t SLICE = 8;    // floats in 32 bytes: each block's share starts 32-byte aligned

extern "C" __global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR out, GM_ADDR workspace, GM_ADDR tiling)
{
    KernelTiling t;
    CopyTiling(&t, tiling);
    const int64_t total = t.x_d0 * t.x_d1;
    const int64_t per = ((total + GetBlockNum() - 1) / GetBlockNum() + SLICE - 1) / SLICE * SLICE;
    const int64_t begin = per * GetBlockIdx();
    const int64_t end = begin + per < total ? begin + per : total;
    GlobalTensor<float> xGm, outGm;
    xGm.SetGlobalBuffer((__gm__ float*)x, total);
    outGm.SetGlobalBuffer((__gm__ float*)out, total);
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, TILE * sizeof(float));
    LocalTensor<float> v = buf.Get<float>();
    for (int64_t off = begin; off < end; off += TILE) {
        const int64_t n = end - off < TILE ? end - off : TILE;
        DataCopyExtParams copy{1, (uint32_t)(n * sizeof(float)), 0, 0, 0};
        DataCopyPad(v, xGm[off], copy, DataCopyPadExtParams<float>{false, 0, 0, 0.0f});
        SetFlag<HardEvent::MTE2_S>(0);  // the tile is in UB before the scalar unit reads it
        WaitFlag<HardEvent::MTE2_S>(0);
        for (int64_t i = 0; i < n; ++i) {
            const float e = v.GetValue(i);
            v.SetValue(i, e > 0.0f ? e : 0.0f);  // FORMULA
        }
        SetFlag<HardEvent::S_MTE3>(0);  // written before it is copied out
        WaitFlag<HardEvent::S_MTE3>(0);
        DataCopyPad(outGm[off], v, copy);
        SetFlag<HardEvent::MTE3_S>(0);  // copied out before the next tile's scalar writes
        WaitFlag<HardEvent::MTE3_S>(0);
        SetFlag<HardEvent::MTE3_MTE2>(0);  // and before the next tile is copied in
        WaitFlag<HardEvent::MTE3_MTE2>(0);
    }
}
