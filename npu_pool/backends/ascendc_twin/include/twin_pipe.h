// EvoKernel Ascend C twin: on-chip memory management. TPipe::InitBuffer hands out the block's
// Unified Buffer through a TQue (Alloc -> EnQue -> DeQue -> Free, the queue rules checked) or a
// TBuf; the block index and the workspaces; DumpTensor.
#pragma once

#include "twin_tensor.h"

namespace AscendC {

enum class HardEvent : uint8_t {
    MTE2_MTE1, MTE1_MTE2, MTE1_M, M_MTE1, MTE2_V, V_MTE2, MTE3_V, V_MTE3, M_V, V_M, V_V, MTE3_MTE1, MTE1_MTE3,
    MTE1_V, MTE2_M, M_MTE2, V_MTE1, M_FIX, FIX_M, MTE3_MTE2, MTE2_MTE3, S_V, V_S, S_MTE2, MTE2_S, S_MTE3, MTE3_S,
    MTE2_FIX, FIX_MTE2, FIX_S, M_S, FIX_MTE3, MTE1_FIX, FIX_MTE1, FIX_FIX, MAX
};

// Event ids from the pipe (the twin hands out id 0..7 round robin; they only need to pair up).
class TPipeEvents {
public:
    int32_t FetchEventID(HardEvent) { return next_++ % 8; }
    template <HardEvent e>
    int32_t FetchEventID() { return next_++ % 8; }
    template <HardEvent e>
    int32_t AllocEventID() { return next_++ % 8; }
    template <HardEvent e>
    void ReleaseEventID(int32_t) {}

private:
    int32_t next_ = 0;
};

class TPipe;

namespace twin_detail {

// The buffers and FIFO shared by TQue and TQueBind.
class QueueBase {
public:
    QueueBase() = default;
    QueueBase(const QueueBase&) = delete;
    QueueBase& operator=(const QueueBase&) = delete;

    template <class T>
    LocalTensor<T> AllocTensor(evk_twin::Src src = {}) {
        require_init("TQue::AllocTensor", src);
        for (uint32_t i = 0; i < count_; ++i) {
            evk_twin::Slot& s = slots_[i];
            if (s.state == evk_twin::kFree) {
                s.state = evk_twin::kAllocated;
                join(prod_, s.freed);  // the framework's flag: the last consumer of this buffer is done
                return LocalTensor<T>(reinterpret_cast<T*>(s.base), s.bytes / sizeof(T), &s, pos_);
            }
        }
        evk_twin::fault("queue-depth", "TQue::AllocTensor", src,
                        "all " + std::to_string(count_) +
                            " buffers of this queue are allocated and not yet freed (the device would wait forever)");
    }
    template <class T>
    bool EnQue(const LocalTensor<T>& tensor, evk_twin::Src src = {}) {
        require_init("TQue::EnQue", src);
        evk_twin::Slot* s = own(tensor.slot(), "TQue::EnQue", src);
        if (s->generation != tensor.generation()) {
            evk_twin::fault("use-after-free", "TQue::EnQue", src, "EnQue of a local tensor that was already freed");
        }
        // A dequeued tensor may go back into its queue (the published SoftMax sample passes its
        // result to the copy-out that way); one already in the queue may not.
        if (s->state == evk_twin::kEnqueued) {
            evk_twin::fault("queue-order", "TQue::EnQue", src,
                            "EnQue of a tensor already in the queue (order: AllocTensor -> EnQue -> DeQue -> FreeTensor)");
        }
        if (fifo_.size() >= depth_) {
            evk_twin::fault("queue-depth", "TQue::EnQue", src,
                            "queue of depth " + std::to_string(depth_) + " already holds " +
                                std::to_string(fifo_.size()) + " tensors; DeQue one first");
        }
        s->state = evk_twin::kEnqueued;
        s->enqueued = capture(prod_);  // the framework's flag producer -> consumer (e.g. MTE2_V for VECIN)
        fifo_.push_back(s);
        auto& c = evk_twin::state().counters;
        (count_ >= 2 ? c.enque_multi : c.enque_single) += 1;
        return true;
    }
    template <class T>
    LocalTensor<T> DeQue(evk_twin::Src src = {}) {
        require_init("TQue::DeQue", src);
        if (fifo_.empty()) {
            evk_twin::fault("queue-order", "TQue::DeQue", src,
                            "DeQue from an empty queue (no EnQue before it: the device would wait forever)");
        }
        evk_twin::Slot* s = fifo_.front();
        fifo_.erase(fifo_.begin());
        s->state = evk_twin::kDequeued;
        join(cons_, s->enqueued);
        return LocalTensor<T>(reinterpret_cast<T*>(s->base), s->bytes / sizeof(T), s, pos_);
    }
    template <class T>
    void FreeTensor(const LocalTensor<T>& tensor, evk_twin::Src src = {}) {
        require_init("TQue::FreeTensor", src);
        evk_twin::Slot* s = own(tensor.slot(), "TQue::FreeTensor", src);
        if (s->generation != tensor.generation()) {
            evk_twin::fault("use-after-free", "TQue::FreeTensor", src, "FreeTensor of a tensor already freed");
        }
        // The device's release refuses only a buffer that is already free (caught above by the
        // generation): a tensor allocated and computed on but never enqueued may be freed. One
        // still in the queue may not: DeQue would hand out a buffer the next AllocTensor reuses.
        if (s->state == evk_twin::kEnqueued) {
            evk_twin::fault("queue-order", "TQue::FreeTensor", src,
                            "FreeTensor of a tensor still in the queue (EnQue-d, not DeQue-d): DeQue would return a "
                            "buffer the next AllocTensor also hands out");
        }
        s->state = evk_twin::kFree;
        s->freed = capture(cons_);  // the framework's flag consumer -> producer (e.g. V_MTE2 for VECIN)
        ++s->generation;
    }
    bool VacantInQue() const { return fifo_.size() < depth_; }
    bool HasTensorInQue() const { return !fifo_.empty(); }
    int32_t GetTensorCountInQue() const { return static_cast<int32_t>(fifo_.size()); }
    bool HasIdleBuffer() const {
        for (uint32_t i = 0; i < count_; ++i)
            if (slots_[i].state == evk_twin::kFree) return true;
        return false;
    }
    void FreeAllEvent() {}

    // --- twin internals ---
    void init(uint8_t* base, uint32_t num, uint32_t len_rounded) {
        count_ = num;
        for (uint32_t i = 0; i < num && i < kMaxBuffers; ++i) {
            slots_[i] = evk_twin::Slot{};
            slots_[i].base = base + uint64_t(i) * len_rounded;
            slots_[i].bytes = len_rounded;
            slots_[i].kind = "TQue";
        }
        fifo_.clear();
    }
    bool initialised() const { return count_ > 0; }
    static constexpr uint32_t kMaxBuffers = 16;

protected:
    // The pipes a queue's buffers pass between, as the framework's flags order them: a TQue at
    // VECIN is filled by MTE2 and read by V, at VECOUT filled by V and copied out by MTE3, at
    // VECCALC used by V alone; a TQueBind<src, dst> goes from src's producer to dst's consumer
    // (VECIN -> VECOUT: MTE2 to MTE3). Other positions (the cube's) order every pipe (-1).
    static int producer(TPosition src) {
        switch (src) {
            case TPosition::GM: case TPosition::VECIN: return evk_twin::kPipeMTE2;
            case TPosition::VECOUT: case TPosition::VECCALC: return evk_twin::kPipeV;
            default: return -1;
        }
    }
    static int consumer(TPosition dst) {
        switch (dst) {
            case TPosition::VECIN: case TPosition::VECCALC: return evk_twin::kPipeV;
            case TPosition::VECOUT: case TPosition::GM: return evk_twin::kPipeMTE3;
            default: return -1;
        }
    }
    static evk_twin::Clock capture(int pipe) {
        if (pipe >= 0) return evk_twin::hb_capture(pipe);
        evk_twin::Clock all;
        for (int p = 0; p < evk_twin::kPipes; ++p) all.join(evk_twin::hb_capture(p));
        return all;
    }
    static void join(int pipe, const evk_twin::Clock& c) {
        if (pipe >= 0) return evk_twin::hb_join(pipe, c);
        for (int p = 0; p < evk_twin::kPipes; ++p) evk_twin::hb_join(p, c);
    }
    QueueBase(TPosition src, TPosition pos, uint32_t depth)
        : pos_(pos), depth_(depth == 0 ? 1 : depth), prod_(producer(src)), cons_(consumer(pos)) {}
    void require_init(const char* api, evk_twin::Src src) const {
        evk_twin::seen(src);
        if (count_ == 0) evk_twin::fault("queue-order", api, src, "queue used before TPipe::InitBuffer");
    }
    evk_twin::Slot* own(evk_twin::Slot* s, const char* api, evk_twin::Src src) {
        for (uint32_t i = 0; i < count_; ++i)
            if (&slots_[i] == s) return s;
        evk_twin::fault("queue-order", api, src, "the tensor was not allocated from this queue");
    }
    TPosition pos_ = TPosition::VECIN;
    uint32_t depth_ = 1;
    uint32_t count_ = 0;
    int prod_ = -1, cons_ = -1;
    evk_twin::Slot slots_[kMaxBuffers];
    std::vector<evk_twin::Slot*> fifo_;
};

}  // namespace twin_detail

template <TPosition pos, int32_t depth = 1, auto... rest>
class TQue : public twin_detail::QueueBase {
public:
    TQue() : QueueBase(pos == TPosition::VECIN ? TPosition::GM : pos, pos == TPosition::VECOUT ? TPosition::GM : pos,
                       static_cast<uint32_t>(depth)) {
        pos_ = pos;
    }
};

template <TPosition src, TPosition dst, int32_t depth = 1, auto... rest>
class TQueBind : public twin_detail::QueueBase {
public:
    TQueBind() : QueueBase(src, dst, static_cast<uint32_t>(depth)) {}
};

template <TPosition pos = TPosition::VECCALC>
class TBuf {
public:
    TBuf() = default;
    TBuf(const TBuf&) = delete;
    TBuf& operator=(const TBuf&) = delete;
    template <class T>
    LocalTensor<T> Get(evk_twin::Src src = {}) {
        require_init(src);
        return LocalTensor<T>(reinterpret_cast<T*>(slot_.base), slot_.bytes / sizeof(T), &slot_, pos);
    }
    template <class T>
    LocalTensor<T> Get(uint32_t len, evk_twin::Src src = {}) {
        require_init(src);
        if (uint64_t(len) * sizeof(T) > slot_.bytes) {
            evk_twin::fault("local-bounds", "TBuf::Get", src,
                            std::to_string(len) + " elements do not fit the " + std::to_string(slot_.bytes) +
                                "-byte TBuf");
        }
        return LocalTensor<T>(reinterpret_cast<T*>(slot_.base), len, &slot_, pos);
    }
    template <class T>
    LocalTensor<T> GetWithOffset(uint32_t size, uint32_t bufOffset, evk_twin::Src src = {}) {
        require_init(src);
        if (bufOffset % 32 != 0 || uint64_t(bufOffset) + uint64_t(size) * sizeof(T) > slot_.bytes) {
            evk_twin::fault(bufOffset % 32 ? "alignment" : "local-bounds", "TBuf::GetWithOffset", src,
                            "offset " + std::to_string(bufOffset) + " bytes + " + std::to_string(size) +
                                " elements outside the " + std::to_string(slot_.bytes) +
                                "-byte TBuf or not 32-byte aligned");
        }
        return LocalTensor<T>(reinterpret_cast<T*>(slot_.base + bufOffset), size, &slot_, pos);
    }
    // --- twin internals ---
    void init(uint8_t* base, uint32_t len_rounded) {
        slot_ = evk_twin::Slot{};
        slot_.base = base;
        slot_.bytes = len_rounded;
        slot_.state = evk_twin::kFixed;
        slot_.kind = "TBuf";
    }

private:
    void require_init(evk_twin::Src src) const {
        if (!slot_.base) evk_twin::fault("queue-order", "TBuf::Get", src, "TBuf used before TPipe::InitBuffer");
    }
    evk_twin::Slot slot_;
};

class TPipe : public TPipeEvents {
public:
    TPipe() : start_(evk_twin::state().ub_used) {}
    ~TPipe() { evk_twin::state().ub_used = start_; }
    TPipe(const TPipe&) = delete;
    TPipe& operator=(const TPipe&) = delete;

    template <class Q, class = decltype(std::declval<Q&>().init(nullptr, 0u, 0u))>
    bool InitBuffer(Q& que, uint8_t num, uint32_t len, evk_twin::Src src = {}) {
        if (num == 0 || num > twin_detail::QueueBase::kMaxBuffers) {
            evk_twin::fault("queue-depth", "TPipe::InitBuffer", src,
                            "a queue needs 1 to 16 buffers, not " + std::to_string(num));
        }
        if (que.initialised()) {
            evk_twin::fault("queue-order", "TPipe::InitBuffer", src, "the queue was already given buffers");
        }
        const uint32_t rounded = round32(len);
        que.init(take(uint64_t(rounded) * num, src), num, rounded);
        return true;
    }
    template <TPosition pos>
    bool InitBuffer(TBuf<pos>& buf, uint32_t len, evk_twin::Src src = {}) {
        buf.init(take(round32(len), src), round32(len));
        return true;
    }
    void Reset() { evk_twin::state().ub_used = start_; }
    void Destroy() { Reset(); }
    void Init() {}

private:
    static uint32_t round32(uint32_t len) { return (len + 31u) & ~31u; }
    uint8_t* take(uint64_t bytes, evk_twin::Src src) {
        evk_twin::State& s = evk_twin::state();
        if (s.ub_used + bytes > s.soc.ub_bytes) {
            evk_twin::fault("ub-capacity", "TPipe::InitBuffer", src,
                            "needs " + std::to_string(bytes) + " bytes but the " + std::to_string(s.soc.ub_bytes) +
                                "-byte Unified Buffer of one core (" + s.soc.name + ") has " +
                                std::to_string(s.soc.ub_bytes - s.ub_used) + " left (" +
                                std::to_string(s.ub_used) + " already given to buffers)");
        }
        uint8_t* p = s.ub + s.ub_used;
        s.ub_used += bytes;
        return p;
    }
    uint64_t start_;
};

inline int64_t GetBlockIdx() { return evk_twin::state().block_idx; }
inline int64_t GetBlockNum() { return evk_twin::state().block_num; }
inline int64_t GetSubBlockIdx() { return 0; }
inline int64_t GetTaskRation() { return 1; }

inline void SetSysWorkspace(GM_ADDR workspace) { evk_twin::state().sys_workspace = workspace; }
inline GM_ADDR GetSysWorkSpacePtr() { return evk_twin::state().sys_workspace; }
// The kernel's workspace argument starts with the system workspace (16 MiB, the library's
// scratch, as CANN's framework lays it out); the host tiling's user workspace follows it.
constexpr uint64_t kTwinSystemWorkspaceBytes = 16ull << 20;
inline GM_ADDR GetUserWorkspace(GM_ADDR workspace) { return workspace ? workspace + kTwinSystemWorkspaceBytes : nullptr; }

}  // namespace AscendC

namespace AscendC {
// DumpTensor(tensor, desc, count): the first elements as a note in the profile.
template <class T>
inline void DumpTensor(const LocalTensor<T>& tensor, uint32_t desc, uint32_t count, evk_twin::Src src = {}) {
    std::string text = "DumpTensor " + std::to_string(desc) + " (block " + std::to_string(evk_twin::state().block_idx) + "):";
    for (uint32_t i = 0; i < count && i < tensor.GetSize() && i < 16; ++i) text += " " + std::to_string(static_cast<double>(tensor.data()[i]));
    evk_twin::seen(src);
    evk_twin::note(text);
}
}  // namespace AscendC

// The kernel language's built-in block_idx and block_num (the samples' `x + block_idx * n`): the
// running block's index and the launch's block count, read where they are used.
namespace evk_twin {
struct BlockIdxValue {
    operator int64_t() const { return state().block_idx; }
};
struct BlockNumValue {
    operator int64_t() const { return state().block_num; }
};
}  // namespace evk_twin
inline const evk_twin::BlockIdxValue block_idx{};
inline const evk_twin::BlockNumValue block_num{};
