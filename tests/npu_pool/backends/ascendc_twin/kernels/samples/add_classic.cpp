// tensors: 3
// Classic TQue style (a kernel class with Init/Process/CopyIn/Compute/CopyOut, double-buffered
// queues), two halves: the host splits n[0] elements over 8 blocks (the last one shorter) and
// tiles of n[1] elements; the kernel reads the struct the host set.
using namespace AscendC;

constexpr int32_t BUFFER_NUM = 2;

struct AddTiling {
    uint32_t totalLength;
    uint32_t blockLength;  // elements per block, a multiple of 8 (32-byte aligned slices)
    uint32_t tileLength;
};

void TilingFunc(const KernelTiling& shapes, HostTiling& host)
{
    AddTiling t;
    t.totalLength = static_cast<uint32_t>(shapes.n[0]);
    t.tileLength = static_cast<uint32_t>(shapes.n[1]);
    host.blockDim = 8;
    t.blockLength = AscendC::DivCeil(AscendC::DivCeil(t.totalLength, host.blockDim), 8u) * 8;
    host.SetTiling(t);
}

class KernelAdd {
public:
    __aicore__ inline KernelAdd() {}
    __aicore__ inline void Init(GM_ADDR x, GM_ADDR y, GM_ADDR z, const AddTiling& t)
    {
        ASSERT(GetBlockNum() != 0 && "block dim can not be zero!");
        const uint32_t begin = t.blockLength * GetBlockIdx();
        length_ = begin >= t.totalLength ? 0 : (t.totalLength - begin < t.blockLength ? t.totalLength - begin : t.blockLength);
        tileLength_ = t.tileLength;
        xGm.SetGlobalBuffer((__gm__ float*)x + begin, length_);
        yGm.SetGlobalBuffer((__gm__ float*)y + begin, length_);
        zGm.SetGlobalBuffer((__gm__ float*)z + begin, length_);
        pipe.InitBuffer(inQueueX, BUFFER_NUM, tileLength_ * sizeof(float));
        pipe.InitBuffer(inQueueY, BUFFER_NUM, tileLength_ * sizeof(float));
        pipe.InitBuffer(outQueueZ, BUFFER_NUM, tileLength_ * sizeof(float));
    }
    __aicore__ inline void Process()
    {
        for (uint32_t off = 0; off < length_; off += tileLength_) {
            const uint32_t n = length_ - off < tileLength_ ? length_ - off : tileLength_;
            CopyIn(off, n);
            Compute(n);
            CopyOut(off, n);
        }
    }

private:
    __aicore__ inline void CopyIn(uint32_t off, uint32_t n)
    {
        LocalTensor<float> xLocal = inQueueX.AllocTensor<float>();
        LocalTensor<float> yLocal = inQueueY.AllocTensor<float>();
        DataCopy(xLocal, xGm[off], n);  // n is a multiple of 8: whole 32-byte blocks
        DataCopy(yLocal, yGm[off], n);
        inQueueX.EnQue(xLocal);
        inQueueY.EnQue(yLocal);
    }
    __aicore__ inline void Compute(uint32_t n)
    {
        LocalTensor<float> xLocal = inQueueX.DeQue<float>();
        LocalTensor<float> yLocal = inQueueY.DeQue<float>();
        LocalTensor<float> zLocal = outQueueZ.AllocTensor<float>();
        Add(zLocal, xLocal, yLocal, n);
        outQueueZ.EnQue<float>(zLocal);
        inQueueX.FreeTensor(xLocal);
        inQueueY.FreeTensor(yLocal);
    }
    __aicore__ inline void CopyOut(uint32_t off, uint32_t n)
    {
        LocalTensor<float> zLocal = outQueueZ.DeQue<float>();
        DataCopy(zGm[off], zLocal, n);
        outQueueZ.FreeTensor(zLocal);
    }

    TPipe pipe;
    TQue<TPosition::VECIN, BUFFER_NUM> inQueueX, inQueueY;
    TQue<TPosition::VECOUT, BUFFER_NUM> outQueueZ;
    GlobalTensor<float> xGm, yGm, zGm;
    uint32_t length_ = 0, tileLength_ = 0;
};

extern "C" __global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR y, GM_ADDR z, GM_ADDR workspace, GM_ADDR tiling)
{
    AddTiling t;
    CopyTiling(&t, tiling);
    KernelAdd op;
    op.Init(x, y, z, t);
    op.Process();
}
