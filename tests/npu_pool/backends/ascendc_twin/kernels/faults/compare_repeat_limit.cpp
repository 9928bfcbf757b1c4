// expect-fault: repeat-limit
// a mask-form Compare over 256 repeats of 64 floats (the 8-bit field holds at most 255)
using namespace AscendC;

extern "C" __global__ __aicore__ void kernel(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR workspace, GM_ADDR tiling)
{
    TPipe pipe;
    TBuf<TPosition::VECCALC> xb, mb;
    pipe.InitBuffer(xb, 256 * 64 * sizeof(float));
    pipe.InitBuffer(mb, 256 * 64 / 8);
    LocalTensor<float> x = xb.Get<float>();
    LocalTensor<uint8_t> bits = mb.Get<uint8_t>();
    Duplicate(x, 1.0f, 256 * 64);
    Compare(bits, x, x, CMPMODE::EQ, 64, 256, {1, 1, 1, 8, 8, 8});  // FAULT
}
