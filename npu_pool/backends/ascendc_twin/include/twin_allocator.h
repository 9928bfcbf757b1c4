// EvoKernel Ascend C twin: LocalMemAllocator, the static-tensor style's Unified Buffer allocator.
//
// allocator.Alloc<[TPosition,] T, tileSize>() or Alloc<[TPosition,] T>(tileSize) hands out the
// next tileSize elements of the core's Unified Buffer under TPipe::InitBuffer's rules: each
// tensor starts 32-byte aligned (sizes round up to 32 bytes) and the buffer's capacity is the
// SoC's UB (rule `ub-capacity`). Its tensors are not in queues: the kernel orders the pipelines
// with SetFlag/WaitFlag, as in the samples of this style.
#pragma once

#include <deque>

#include "twin_pipe.h"

namespace AscendC {

enum class Hardware : uint8_t { GM, UB, L1, L0A, L0B, L0C, BIAS, FIXBUF, MAX };

template <Hardware hard = Hardware::UB>
class LocalMemAllocator {
    static_assert(hard == Hardware::UB, "LocalMemAllocator: only Hardware::UB is in the EvoKernel twin");

public:
    LocalMemAllocator() : start_(evk_twin::state().ub_used) {}
    LocalMemAllocator(const LocalMemAllocator&) = delete;
    LocalMemAllocator& operator=(const LocalMemAllocator&) = delete;
    ~LocalMemAllocator() { evk_twin::state().ub_used = start_; }

    uint32_t GetCurAddr() const { return static_cast<uint32_t>(evk_twin::state().ub_used); }

    template <class T, uint32_t tileSize>
    LocalTensor<T> Alloc(evk_twin::Src src = {}) {
        return take<T>(TPosition::VECCALC, tileSize, src);
    }
    template <TPosition pos, class T, uint32_t tileSize>
    LocalTensor<T> Alloc(evk_twin::Src src = {}) {
        return take<T>(pos, tileSize, src);
    }
    template <class T>
    LocalTensor<T> Alloc(uint32_t tileSize, evk_twin::Src src = {}) {
        return take<T>(TPosition::VECCALC, tileSize, src);
    }
    template <TPosition pos, class T>
    LocalTensor<T> Alloc(uint32_t tileSize, evk_twin::Src src = {}) {
        return take<T>(pos, tileSize, src);
    }

private:
    template <class T>
    LocalTensor<T> take(TPosition pos, uint32_t elements, evk_twin::Src src) {
        evk_twin::seen(src);
        evk_twin::State& s = evk_twin::state();
        const uint64_t bytes = (uint64_t(elements) * sizeof(T) + 31) / 32 * 32;
        if (s.ub_used + bytes > s.soc.ub_bytes) {
            evk_twin::fault("ub-capacity", "LocalMemAllocator::Alloc", src,
                            "needs " + std::to_string(bytes) + " bytes but the " + std::to_string(s.soc.ub_bytes) +
                                "-byte Unified Buffer of one core (" + s.soc.name + ") has " +
                                std::to_string(s.soc.ub_bytes - s.ub_used) + " left");
        }
        slots_.emplace_back();
        evk_twin::Slot& slot = slots_.back();
        slot.base = s.ub + s.ub_used;
        slot.bytes = static_cast<uint32_t>(bytes);
        slot.state = evk_twin::kFixed;
        slot.kind = "LocalMemAllocator";
        s.ub_used += bytes;
        return LocalTensor<T>(reinterpret_cast<T*>(slot.base), elements, &slot, pos);
    }
    uint64_t start_;
    std::deque<evk_twin::Slot> slots_;  // stable addresses: tensors point at their slot
};

}  // namespace AscendC
