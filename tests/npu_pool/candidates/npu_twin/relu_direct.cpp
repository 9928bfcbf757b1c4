// task: level1/4_ReLU.py
// expect-gate: ok
// The direct-launch form: a torch_npu extension that tiles on the host and launches its own
// kernel with <<<>>> (a kernel template taking scalars), registered with PYBIND11_MODULE.
#include <algorithm>
#include <torch/extension.h>
#include "kernel_operator.h"
#include "torch_npu/csrc/core/npu/NPUStream.h"
#include "tiling/platform/platform_ascendc.h"

template <typename T>
__global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR y, int64_t total, int64_t perBlock, uint32_t tileBytes)
{
    AscendC::TPipe pipe;
    AscendC::TQue<AscendC::QuePosition::VECIN, 2> qIn;
    AscendC::TQue<AscendC::QuePosition::VECOUT, 2> qOut;
    pipe.InitBuffer(qIn, 2, tileBytes);
    pipe.InitBuffer(qOut, 2, tileBytes);
    const int64_t start = perBlock * AscendC::GetBlockIdx();
    const int64_t mine = std::min<int64_t>(perBlock, total - start);
    AscendC::GlobalTensor<T> xGm, yGm;
    xGm.SetGlobalBuffer((__gm__ T*)x + start, mine);
    yGm.SetGlobalBuffer((__gm__ T*)y + start, mine);
    const int64_t tile = tileBytes / sizeof(T);
    for (int64_t done = 0; done < mine; done += tile) {
        const uint32_t n = static_cast<uint32_t>(std::min<int64_t>(tile, mine - done));
        AscendC::DataCopyExtParams bytes{1, static_cast<uint32_t>(n * sizeof(T)), 0, 0, 0};
        auto in = qIn.AllocTensor<T>();
        AscendC::DataCopyPad(in, xGm[done], bytes, AscendC::DataCopyPadExtParams<T>{false, 0, 0, 0});
        qIn.EnQue(in);
        in = qIn.DeQue<T>();
        auto out = qOut.AllocTensor<T>();
        AscendC::Relu(out, in, n);
        qOut.EnQue(out);
        qIn.FreeTensor(in);
        out = qOut.DeQue<T>();
        AscendC::DataCopyPad(yGm[done], out, bytes);
        qOut.FreeTensor(out);
    }
}

// Host tiling: a block per 2048 elements up to the vector cores, four buffers of the UB each.
static void relu_tiling(int64_t total, int64_t& blocks, int64_t& perBlock, uint32_t& tileBytes)
{
    auto platform = platform_ascendc::PlatformAscendCManager::GetInstance();
    uint64_t ub = 0;
    platform->GetCoreMemSize(platform_ascendc::CoreMemType::UB, ub);
    blocks = std::max<int64_t>(1, std::min<int64_t>(platform->GetCoreNumAiv(), (total + 2047) / 2048));
    perBlock = (total + blocks - 1) / blocks;
    tileBytes = static_cast<uint32_t>(ub / 4 / 32 * 32);
}

torch::Tensor relu_direct(const torch::Tensor& x)
{
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "float32 only");
    auto y = torch::empty_like(x);
    int64_t blocks = 0, perBlock = 0;
    uint32_t tileBytes = 0;
    relu_tiling(x.numel(), blocks, perBlock, tileBytes);
    void* stream = c10_npu::getCurrentNPUStream().stream(false);
    kernel<float><<<blocks, nullptr, stream>>>(
        (GM_ADDR)x.data_ptr(), (GM_ADDR)y.data_ptr(), x.numel(), perBlock, tileBytes);
    return y;
}

PYBIND11_MODULE(relu_direct_ops, m)
{
    m.def("relu", &relu_direct, "ReLU through a direct launch");
}
