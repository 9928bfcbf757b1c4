// rung: vector
// task: r42_BatchedMatmulAbs
// summary: vector rung, matmul family (3-d, 3-d -> 3-d, batched): r42_BatchedMatmulAbs, each row of out (of every batch) accumulated in UB as a sum of B's rows scaled by A's row (Axpy), B's rows copied in chunks (one DataCopyPad, each row 32-byte aligned in UB), Abs, DataCopyPad out; flag pairs between the pipes
using namespace AscendC;
constexpr int64_t UB_B = 16384;  // floats of B's rows in UB at once: 64 KiB
constexpr int64_t MAX_K = 8192;  // floats of a row of A in UB
constexpr int64_t MAX_N = 8192;  // floats of a row of out in UB

extern "C" __global__ __aicore__ void kernel(GM_ADDR A, GM_ADDR B, GM_ADDR out, GM_ADDR workspace, GM_ADDR tiling)
{
    KernelTiling t;
    CopyTiling(&t, tiling);
    const int64_t batch = t.A_d0, M = t.A_d1, K = t.A_d2, N = t.B_d2;  // out[b, i, :] = |sum over k of A[b, i, k] * B[b, k, :]|
    const int64_t pitch = (N + 7) / 8 * 8;  // a row of B in UB, padded to 32 bytes
    const int64_t chunk = UB_B / pitch < K ? UB_B / pitch : K;  // rows of B per copy
    const int64_t rowsOut = batch * M;  // rows of out over every batch: row r is batch r / M, row r % M
    const int64_t per = (rowsOut + GetBlockNum() - 1) / GetBlockNum();  // whole rows of out per block
    const int64_t first = per * GetBlockIdx();
    const int64_t last = first + per < rowsOut ? first + per : rowsOut;  // the last block's rows end at the tail
    GlobalTensor<float> aGm, bGm, outGm;
    aGm.SetGlobalBuffer((__gm__ float*)A, batch * M * K);
    bGm.SetGlobalBuffer((__gm__ float*)B, batch * K * N);
    outGm.SetGlobalBuffer((__gm__ float*)out, batch * M * N);
    TPipe pipe;
    TBuf<TPosition::VECCALC> aBuf, bBuf, accBuf;
    pipe.InitBuffer(aBuf, MAX_K * sizeof(float));
    pipe.InitBuffer(bBuf, UB_B * sizeof(float));
    pipe.InitBuffer(accBuf, MAX_N * sizeof(float));
    LocalTensor<float> a = aBuf.Get<float>(), b = bBuf.Get<float>(), acc = accBuf.Get<float>();
    DataCopyPadExtParams<float> pad{false, 0, 0, 0.0f};
    for (int64_t i = first; i < last; ++i) {
        const int64_t bOff = i / M * K * N;  // where this row's batch of B starts
        DataCopyPad(a, aGm[i * K], DataCopyExtParams{1, (uint32_t)(K * sizeof(float)), 0, 0, 0}, pad);
        SetFlag<HardEvent::MTE2_S>(0);  // 1. A's row is in UB before the scalar unit reads it
        WaitFlag<HardEvent::MTE2_S>(0);
        Duplicate(acc, 0.0f, (int32_t)N);
        for (int64_t k0 = 0; k0 < K; k0 += chunk) {
            const int64_t rows = K - k0 < chunk ? K - k0 : chunk;  // the last chunk is shorter
            // `rows` rows of N floats, each starting a 32-byte block in UB (pitch floats apart)
            DataCopyPad(b, bGm[bOff + k0 * N], DataCopyExtParams{(uint16_t)rows, (uint32_t)(N * sizeof(float)), 0, 0, 0}, pad);
            SetFlag<HardEvent::MTE2_V>(0);  // 2. B's rows are in UB before the vector unit reads them
            WaitFlag<HardEvent::MTE2_V>(0);
            for (int64_t k = 0; k < rows; ++k) {
                Axpy(acc, b[k * pitch], a.GetValue(k0 + k), (int32_t)N);  // acc += A[i, k] * B[k, :]
            }
            SetFlag<HardEvent::V_MTE2>(0);  // 3. read before the next chunk overwrites B's rows
            WaitFlag<HardEvent::V_MTE2>(0);
        }
        SetFlag<HardEvent::S_MTE2>(0);  // 4. A's row is read before the next row's copy-in overwrites it
        WaitFlag<HardEvent::S_MTE2>(0);
        Abs(acc, acc, (int32_t)N);
        SetFlag<HardEvent::V_MTE3>(0);  // 5. the row of out is in UB before it is copied out
        WaitFlag<HardEvent::V_MTE3>(0);
        DataCopyPad(outGm[i * N], acc, DataCopyExtParams{1, (uint32_t)(N * sizeof(float)), 0, 0, 0});
        SetFlag<HardEvent::MTE3_V>(0);  // 6. copied out before the next row overwrites `acc`
        WaitFlag<HardEvent::MTE3_V>(0);
    }
}
