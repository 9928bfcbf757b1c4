// rung: vector
// task: r12_BandKeep
// summary: vector rung, elementwise family with two constructor scalars: r12_BandKeep, one UB tile loop per block (DataCopyPad in, CompareScalar into bit masks, Select against 0, DataCopyPad out), whole 256-byte repeats for the compares; flag pairs between the pipes
using namespace AscendC;
constexpr int64_t TILE = 8192;    // floats per tile: 32 KiB of UB
constexpr int64_t REPEAT = 64;    // floats in one 256-byte repeat: Compare works on whole repeats
constexpr int64_t SLICE = 8;      // floats in 32 bytes: each block's share starts 32-byte aligned

extern "C" __global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR out, GM_ADDR workspace, GM_ADDR tiling)
{
    KernelTiling t;
    CopyTiling(&t, tiling);
    const float lo = t.low, hi = t.high;  // the constructor's scalars arrive in the tiling
    const int64_t total = t.out_d0 * t.out_d1;
    const int64_t per = ((total + GetBlockNum() - 1) / GetBlockNum() + SLICE - 1) / SLICE * SLICE;  // this block's share
    const int64_t begin = per * GetBlockIdx();
    const int64_t end = begin + per < total ? begin + per : total;  // the last block's share ends at the tail
    GlobalTensor<float> xGm, outGm;
    xGm.SetGlobalBuffer((__gm__ float*)x, total);
    outGm.SetGlobalBuffer((__gm__ float*)out, total);
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf, loBuf, hiBuf;
    pipe.InitBuffer(buf, TILE * sizeof(float));
    pipe.InitBuffer(loBuf, TILE / 8);  // one bit per float
    pipe.InitBuffer(hiBuf, TILE / 8);
    LocalTensor<float> v = buf.Get<float>();
    LocalTensor<uint8_t> aboveLo = loBuf.Get<uint8_t>(), belowHi = hiBuf.Get<uint8_t>();
    for (int64_t off = begin; off < end; off += TILE) {
        const int64_t n = end - off < TILE ? end - off : TILE;  // the tail tile is shorter
        const int32_t whole = (int32_t)((n + REPEAT - 1) / REPEAT * REPEAT);  // n rounded up to whole repeats
        if (whole != n) {  // the tail: the rest of its last repeat is written (zeros) before anything reads it
            Duplicate(v, 0.0f, whole);
            SetFlag<HardEvent::V_MTE2>(0);  // 0. the zeros are written before the copy-in overwrites them
            WaitFlag<HardEvent::V_MTE2>(0);
        }
        DataCopyExtParams copy{1, (uint32_t)(n * sizeof(float)), 0, 0, 0};
        DataCopyPad(v, xGm[off], copy, DataCopyPadExtParams<float>{false, 0, 0, 0.0f});
        SetFlag<HardEvent::MTE2_V>(0);  // 1. the tile is in UB before the vector unit reads it
        WaitFlag<HardEvent::MTE2_V>(0);
        CompareScalar(aboveLo, v, lo, CMPMODE::GE, whole);  // bit: x >= low
        CompareScalar(belowHi, v, hi, CMPMODE::LE, whole);  // bit: x <= high
        Select(v, aboveLo, v, 0.0f, SELMODE::VSEL_TENSOR_SCALAR_MODE, whole);  // x, or 0 below the band
        Select(v, belowHi, v, 0.0f, SELMODE::VSEL_TENSOR_SCALAR_MODE, whole);  // and 0 above it
        SetFlag<HardEvent::V_MTE3>(0);  // 2. the result is in UB before it is copied out
        WaitFlag<HardEvent::V_MTE3>(0);
        DataCopyPad(outGm[off], v, copy);
        SetFlag<HardEvent::MTE3_MTE2>(0);  // 3. copied out before the next tile overwrites UB
        WaitFlag<HardEvent::MTE3_MTE2>(0);
        SetFlag<HardEvent::MTE3_V>(0);  // 4. and before a tail's zeros do
        WaitFlag<HardEvent::MTE3_V>(0);
    }
}
