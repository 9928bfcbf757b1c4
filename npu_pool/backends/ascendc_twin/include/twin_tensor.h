// EvoKernel Ascend C twin: tensors. GlobalTensor is a typed view of global memory; every access
// through the API is checked against the regions the launch registered. LocalTensor is a view
// of this block's Unified Buffer, handed out by TPipe (twin_pipe.h). Each buffer carries a
// generation counter, so a tensor used after FreeTensor faults.
#pragma once

#include "twin_core.h"
#include "twin_half.h"

enum pipe_t : int { PIPE_S = 0, PIPE_V, PIPE_M, PIPE_MTE1, PIPE_MTE2, PIPE_MTE3, PIPE_ALL, PIPE_V2, PIPE_FIX };
enum event_t : int32_t { EVENT_ID0 = 0, EVENT_ID1, EVENT_ID2, EVENT_ID3, EVENT_ID4, EVENT_ID5, EVENT_ID6, EVENT_ID7 };

namespace AscendC {

enum class TPosition : uint8_t {
    GM, A1, A2, B1, B2, C1, C2, CO1, CO2, VECIN, VECOUT, VECCALC, SPM, TSCM, C2PIPE2GM, MAX,
    LCM = VECCALC, SHM = SPM
};
using QuePosition = TPosition;

}  // namespace AscendC

namespace evk_twin {

enum SlotState : int { kFree = 0, kAllocated, kEnqueued, kDequeued, kFixed };
inline const char* slot_state_name(int s) {
    static const char* const names[] = {"free", "allocated", "enqueued", "dequeued", "fixed (TBuf)"};
    return names[s];
}

// One buffer of a queue or a TBuf in the Unified Buffer. The queue's implicit flags: the
// producer's clock at EnQue (the consumer's DeQue waits for it) and the consumer's at FreeTensor
// (the producer's next AllocTensor of this buffer waits for it).
struct Slot {
    uint8_t* base = nullptr;
    uint32_t bytes = 0;
    uint32_t generation = 1;
    int state = kFree;
    const char* kind = "TQue";
    Clock enqueued, freed;
};

// How an API call's operand touches UB (twin_hb.h): the pipe, plus kWrite for a write.
constexpr int kWrite = 8;
constexpr int kReadV = kPipeV, kWriteV = kPipeV | kWrite, kWriteMTE2 = kPipeMTE2 | kWrite, kReadMTE3 = kPipeMTE3;
constexpr int kNoAccess = -1;  // checked, not accessed (a size validated before the access)

inline uint64_t ub_offset(const void* p) {
    return static_cast<uint64_t>(reinterpret_cast<const uint8_t*>(p) - state().ub);
}

}  // namespace evk_twin

namespace AscendC {

template <class T>
class LocalTensor {
public:
    using PrimType = T;
    LocalTensor() = default;
    LocalTensor(T* p, uint32_t elements, evk_twin::Slot* slot, TPosition pos)
        : ptr_(p), size_(elements), slot_(slot), gen_(slot ? slot->generation : 0), pos_(pos) {}

    // A view starting `offset` elements further (the device's tensor[offset]).
    LocalTensor operator[](uint32_t offset) const {
        LocalTensor view = *this;
        if (offset > size_) {
            evk_twin::fault("local-bounds", "LocalTensor::operator[]", evk_twin::Src(nullptr, 0),
                            "offset " + std::to_string(offset) + " is past the end of a " +
                                std::to_string(size_) + "-element local tensor");
        }
        view.ptr_ += offset;
        view.size_ -= offset;
        return view;
    }
    T GetValue(uint32_t index, evk_twin::Src src = {}) const {
        check_scalar(index, "LocalTensor::GetValue", src);
        evk_twin::hb_ub(ptr_ + index, sizeof(T), false, evk_twin::kPipeS, "LocalTensor::GetValue", src);
        return ptr_[index];
    }
    void SetValue(uint32_t index, T value, evk_twin::Src src = {}) const {
        check_scalar(index, "LocalTensor::SetValue", src);
        evk_twin::hb_ub(ptr_ + index, sizeof(T), true, evk_twin::kPipeS, "LocalTensor::SetValue", src);
        ptr_[index] = value;
    }
    // A reference: read or written, the twin cannot tell; recorded as a scalar write.
    T& operator()(uint32_t index) const {
        check_scalar(index, "LocalTensor::operator()", evk_twin::Src(nullptr, 0));
        evk_twin::hb_ub(ptr_ + index, sizeof(T), true, evk_twin::kPipeS, "LocalTensor::operator()", evk_twin::Src(nullptr, 0));
        return ptr_[index];
    }
    template <class U>
    LocalTensor<U> ReinterpretCast() const {
        LocalTensor<U> out(reinterpret_cast<U*>(ptr_), static_cast<uint32_t>(uint64_t(size_) * sizeof(T) / sizeof(U)),
                           slot_, pos_);
        out.set_generation(gen_);
        return out;
    }
    uint32_t GetSize() const { return size_; }
    uint32_t GetLength() const { return size_ * sizeof(T); }
    void SetSize(uint32_t elements, evk_twin::Src src = {}) {
        if (slot_ && (ptr_ - reinterpret_cast<T*>(slot_->base) + uint64_t(elements)) * sizeof(T) > slot_->bytes) {
            evk_twin::fault("local-bounds", "LocalTensor::SetSize", src, "size beyond the tensor's buffer");
        }
        size_ = elements;
    }
    T* GetPhyAddr() const { return ptr_; }
    T* GetPhyAddr(uint32_t offset) const { return ptr_ + offset; }
    TPosition GetPosition() const { return pos_; }

    // --- twin internals (used by the API functions) ---
    T* data() const { return ptr_; }
    evk_twin::Slot* slot() const { return slot_; }
    uint32_t generation() const { return gen_; }
    void set_generation(uint32_t g) { gen_ = g; }

    // Validates a use of `elements` elements from the start by an API call and records it for
    // the happens-before check: `role` is the pipe (plus kWrite), by default a vector read.
    void check(uint64_t elements, const char* api, evk_twin::Src src, bool need_align = true,
               int role = evk_twin::kReadV) const {
        evk_twin::seen(src);
        if (!slot_) evk_twin::fault("use-after-free", api, src, "a LocalTensor that was never allocated");
        if (slot_->generation != gen_) {
            evk_twin::fault("use-after-free", api, src,
                            std::string("a local tensor used after FreeTensor gave its ") + slot_->kind +
                                " buffer back");
        }
        if (slot_->state == evk_twin::kEnqueued) {
            evk_twin::fault("queue-order", api, src,
                            "a local tensor used while it sits in a queue (after EnQue, before DeQue)");
        }
        if (need_align && evk_twin::ub_offset(ptr_) % 32 != 0) {
            evk_twin::fault("alignment", api, src,
                            "local tensor starts at UB byte " + std::to_string(evk_twin::ub_offset(ptr_)) +
                                ", not 32-byte aligned (a view x[offset] needs offset * sizeof(T) % 32 == 0)");
        }
        if (elements > size_) {
            evk_twin::fault("local-bounds", api, src,
                            "touches " + std::to_string(elements) + " elements of a local tensor holding " +
                                std::to_string(size_));
        }
        if (role != evk_twin::kNoAccess) {
            evk_twin::hb_ub(ptr_, elements * sizeof(T), role & evk_twin::kWrite, role & 7, api, src);
        }
    }
    // A vector instruction's destination.
    void check_w(uint64_t elements, const char* api, evk_twin::Src src, bool need_align = true) const {
        check(elements, api, src, need_align, evk_twin::kWriteV);
    }

private:
    // The scalar unit's hot path (kernels read UB element by element): the same checks, once.
    void check_scalar(uint32_t index, const char* api, evk_twin::Src src) const {
        if (!slot_ || slot_->generation != gen_ || slot_->state == evk_twin::kEnqueued || index >= size_) {
            check(uint64_t(index) + 1, api, src, false);
        }
        ++evk_twin::state().counters.scalar_ops;
    }
    T* ptr_ = nullptr;
    uint32_t size_ = 0;
    evk_twin::Slot* slot_ = nullptr;
    uint32_t gen_ = 0;
    TPosition pos_ = TPosition::VECCALC;
};

template <class T>
class GlobalTensor {
public:
    using PrimType = T;
    GlobalTensor() = default;
    void SetGlobalBuffer(__gm__ T* buffer, uint64_t bufferSize = 0) {
        ptr_ = buffer;
        size_ = bufferSize;
    }
    GlobalTensor operator[](uint64_t offset) const {
        GlobalTensor view = *this;
        view.ptr_ += offset;
        view.size_ = size_ > offset ? size_ - offset : 0;
        return view;
    }
    T GetValue(uint64_t index, evk_twin::Src src = {}) const {
        evk_twin::check_gm(ptr_ + index, sizeof(T), false, "GlobalTensor::GetValue", src, evk_twin::kPipeS);
        ++evk_twin::state().counters.gm_scalar;
        evk_twin::TrustedGm checked;  // not a raw access (twin_raw_gm.h)
        return ptr_[index];
    }
    void SetValue(uint64_t index, T value, evk_twin::Src src = {}) const {
        evk_twin::check_gm(ptr_ + index, sizeof(T), true, "GlobalTensor::SetValue", src, evk_twin::kPipeS);
        ++evk_twin::state().counters.gm_scalar;
        evk_twin::TrustedGm checked;  // not a raw access (twin_raw_gm.h)
        ptr_[index] = value;
    }
    // Reference access: checked as a write (the twin cannot tell which it will be).
    T& operator()(uint64_t index) const {
        evk_twin::check_gm(ptr_ + index, sizeof(T), true, "GlobalTensor::operator()", evk_twin::Src(nullptr, 0),
                           evk_twin::kPipeS);
        ++evk_twin::state().counters.gm_scalar;
        return ptr_[index];
    }
    __gm__ T* GetPhyAddr() const { return ptr_; }
    __gm__ T* GetPhyAddr(uint64_t offset) const { return ptr_ + offset; }
    uint64_t GetSize() const { return size_; }
    template <class Hint>
    void SetL2CacheHint(Hint) {}

private:
    T* ptr_ = nullptr;
    uint64_t size_ = 0;
};

}  // namespace AscendC
