// expect-fault: library-tiling
// SoftMax on rows of 128 elements with a SoftMaxTiling computed for rows of 64
using namespace AscendC;

extern "C" __global__ __aicore__ void kernel(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR workspace, GM_ADDR tiling)
{
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 8 * 128 * sizeof(float));
    LocalTensor<float> x = buf.Get<float>();
    Duplicate(x, 1.0f, 8 * 128);
    SoftMaxTiling t;
    t.srcM = 8;
    t.srcK = 64;
    SoftMaxShapeInfo shape{8, 128, 8, 128};
    SoftMax<float>(x, x, t, shape);  // FAULT
}
