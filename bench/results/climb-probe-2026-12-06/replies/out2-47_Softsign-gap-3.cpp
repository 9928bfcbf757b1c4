```cpp
using namespace AscendC;
constexpr int64_t TILE = 8192;
constexpr int64_t SLICE = 8;

extern "C" __global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR out, GM_ADDR workspace, GM_ADDR tiling)
{
    KernelTiling t;
    CopyTiling(&t, tiling);
    const int64_t total = t.out_d0 * t.out_d1;
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
        SetFlag<HardEvent::MTE2_V>(0);  // 1. the tile is in UB before the vector unit reads it
        WaitFlag<HardEvent::MTE2_V>(0);
        
        // Abs(v, v, (int32_t)n);
        Add(v, v, 1.0f, (int32_t)n);  // 2. add 1 to all elements in v
        
        // Ln(v, v, (int32_t)n);
        Exp(v, v, (int32_t)n);   // 3. exponentiate all elements in v
        Ln(v, v, (int32_t)n);   // 4. take the natural logarithm of all elements in v
        
        SetFlag<HardEvent::V_MTE3>(0);  // 5. the result is in UB before it is copied out
        WaitFlag<HardEvent::V_MTE3>(0);
        
        DataCopyPad(outGm[off], v, copy);  // 6. copied out before the next tile overwrites UB
        SetFlag<HardEvent::MTE3_MTE2>(0);  // 7. copied out before the next tile overwrites UB
        WaitFlag<HardEvent::MTE3_MTE2>(0);
    }
}
```