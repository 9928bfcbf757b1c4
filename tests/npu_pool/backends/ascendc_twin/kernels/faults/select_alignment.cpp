// expect-fault: alignment
// rows of 96 floats: the second row's selection bits start 12 bytes into the mask buffer
using namespace AscendC;

extern "C" __global__ __aicore__ void kernel(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR workspace, GM_ADDR tiling)
{
    TPipe pipe;
    TBuf<TPosition::VECCALC> xb, yb, mb;
    pipe.InitBuffer(xb, 2 * 96 * sizeof(float));
    pipe.InitBuffer(yb, 2 * 96 * sizeof(float));
    pipe.InitBuffer(mb, 64);
    LocalTensor<float> x = xb.Get<float>(), y = yb.Get<float>();
    LocalTensor<uint8_t> bits = mb.Get<uint8_t>();
    Duplicate(x, 1.0f, 2 * 96);
    Duplicate(y, 2.0f, 2 * 96);
    Duplicate(bits.ReinterpretCast<uint16_t>(), uint16_t(0x00FF), 32);
    Select(y[96], bits[96 / 8], x[96], y[96], SELMODE::VSEL_TENSOR_TENSOR_MODE, 64, 1, {1, 1, 1, 8, 8, 8});  // FAULT
}
