// rung: first
// task: r14_CumsumOfSquares
// summary: first rung, scan family, a rank-2 input to a rank-2 output with the scan's dim as a constructor scalar (0, 1 or negative): GlobalTensor GetValue/SetValue along each scan, whole scans per block in whole lines
using namespace AscendC;
constexpr int64_t LINE = 16;  // floats in a 64-byte cache line: each block writes whole lines of its own

extern "C" __global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR out, GM_ADDR workspace, GM_ADDR tiling)
{
    KernelTiling t;
    CopyTiling(&t, tiling);
    const int64_t rows = t.x_d0, cols = t.x_d1;
    const int64_t axis = t.dim < 0 ? t.dim + 2 : t.dim;  // a negative dim counts from the end: -1 is 1, -2 is 0
    // axis 1: one scan along each row; axis 0: one scan down each column.
    const int64_t scans = axis == 1 ? rows : cols;  // how many independent scans
    const int64_t len = axis == 1 ? cols : rows;    // elements in each scan
    const int64_t stride = axis == 1 ? 1 : cols;    // from one element of a scan to the next
    const int64_t step = axis == 1 ? cols : 1;      // from the first element of one scan to the next scan's
    // Whole scans per block, 16 at a time: 16 rows are whole lines; 16 columns are whole lines of
    // every row only when a row is whole lines (cols a multiple of 16), else one block takes them all.
    const int64_t share = ((scans + GetBlockNum() - 1) / GetBlockNum() + LINE - 1) / LINE * LINE;
    const int64_t per = axis == 0 && cols % LINE != 0 ? scans : share;
    const int64_t begin = per * GetBlockIdx();
    const int64_t end = begin + per < scans ? begin + per : scans;  // the last block's scans end at the tail
    GlobalTensor<float> xGm, outGm;
    xGm.SetGlobalBuffer((__gm__ float*)x, rows * cols);
    outGm.SetGlobalBuffer((__gm__ float*)out, rows * cols);
    for (int64_t s = begin; s < end; ++s) {
        float sum = 0.0f;  // the running value carries along the scan
        for (int64_t i = 0; i < len; ++i) {
            const int64_t k = s * step + i * stride;
            const float v = xGm.GetValue(k);
            sum += v * v;
            outGm.SetValue(k, sum);
        }
    }
}
