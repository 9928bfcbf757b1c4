// EvoKernel Ascend C twin: synchronisation between the core's pipelines.
//
// Blocks run their instructions in program order on the twin, so barriers and flags change no
// data: they carry the clocks of the happens-before check (twin_hb.h). A WaitFlag may come
// before its SetFlag (it holds only its own pipe) unless it waits on PIPE_S; one never met by a
// SetFlag waits forever on an NPU and is `sync-order`; a second SetFlag of a flag still set is
// lost (`sync-double-set`); a SetFlag never waited for is `sync-unpaired` at the block's end.
#pragma once

#include "twin_pipe.h"

namespace AscendC {

// PipeBarrier<pipe>: the pipe's issued instructions complete before its next one (V, S and M
// already run theirs in order; MTE2 and MTE3 may overlap transfers); PIPE_ALL: every pipe's.
template <pipe_t pipe>
inline void PipeBarrier(evk_twin::Src src = {}) {
    evk_twin::seen(src);
    static_assert(pipe != PIPE_S, "PipeBarrier<PIPE_S>: the scalar pipe is synchronised by the hardware; the "
                                  "documentation says this call raises a hardware error");
    if constexpr (pipe == PIPE_ALL) {
        evk_twin::hb_check_none_held("PipeBarrier<PIPE_ALL>", src);
        evk_twin::hb_barrier_all();
    } else {
        constexpr int p = pipe == PIPE_V || pipe == PIPE_V2 ? evk_twin::kPipeV : pipe == PIPE_M ? evk_twin::kPipeM
                        : pipe == PIPE_MTE1 ? evk_twin::kPipeMTE1 : pipe == PIPE_MTE2 ? evk_twin::kPipeMTE2
                        : pipe == PIPE_MTE3 ? evk_twin::kPipeMTE3 : evk_twin::kPipeFIX;
        evk_twin::Hb& h = evk_twin::state().hb;
        h.vc[p].c[p] = h.issued[p];
    }
}

namespace twin_detail {
inline void flag_id(int32_t id, const char* api, evk_twin::Src src) {
    if (id < 0 || id > 7) {
        evk_twin::fault("invalid-argument", api, src, "event id " + std::to_string(id) + " outside [0, 7]");
    }
}
}  // namespace twin_detail

// SetFlag<X_Y>(id): once X's earlier instructions are complete, the flag is set; WaitFlag<X_Y>(id)
// holds Y's next instructions until it is, then clears it (twin_hb.h carries X's clock to Y).
template <HardEvent event>
inline void SetFlag(int32_t eventID, evk_twin::Src src = {}) {
    evk_twin::seen(src);
    twin_detail::flag_id(eventID, "SetFlag", src);
    evk_twin::hb_set_flag(static_cast<int>(event), eventID, src);
}

template <HardEvent event>
inline void WaitFlag(int32_t eventID, evk_twin::Src src = {}) {
    evk_twin::seen(src);
    twin_detail::flag_id(eventID, "WaitFlag", src);
    evk_twin::hb_wait_flag(static_cast<int>(event), eventID, src);
}

// DataCacheCleanAndInvalid: scalar writes to global memory (GlobalTensor::SetValue) sit in the
// core's data cache; this writes them out (and drops cached lines), so DataCopy and other cores
// read them. SINGLE_CACHE_LINE: the 64-byte line holding the tensor's first address;
// ENTIRE_DATA_CACHE: the whole cache. The LocalTensor form keeps the cache coherent with UB
// (nothing to model); dcciDst is accepted as documented.
enum class CacheLine : uint8_t { SINGLE_CACHE_LINE = 0, ENTIRE_DATA_CACHE };
enum class DcciDst : uint8_t { CACHELINE_ALL = 0, CACHELINE_UB, CACHELINE_OUT, CACHELINE_ATOMIC };

namespace twin_detail {
inline void dcci(const void* p, bool whole, evk_twin::Src src) {
    evk_twin::seen(src);
    // cache lines counted from the tensor's start (a device's allocations are line-aligned;
    // the twin's host buffers need not be); SINGLE_CACHE_LINE cleans from the address to the
    // line's end, as documented
    const uintptr_t at = reinterpret_cast<uintptr_t>(p);
    const evk_twin::Region* r = evk_twin::find_region(at, 1);
    const uintptr_t base = r ? r->begin : 0;
    const uintptr_t end = base + (at - base) / 64 * 64 + 64;
    evk_twin::gm_clean(at, end, whole);
}
}  // namespace twin_detail

template <class T, CacheLine entireType, DcciDst dcciDst>
inline void DataCacheCleanAndInvalid(const GlobalTensor<T>& dst, evk_twin::Src src = {}) {
    twin_detail::dcci(dst.GetPhyAddr(), entireType == CacheLine::ENTIRE_DATA_CACHE, src);
}
template <class T, CacheLine entireType, DcciDst dcciDst>
inline void DataCacheCleanAndInvalid(const LocalTensor<T>&, evk_twin::Src src = {}) {
    evk_twin::seen(src);
}
template <class T, CacheLine entireType>
inline void DataCacheCleanAndInvalid(const GlobalTensor<T>& dst, evk_twin::Src src = {}) {
    twin_detail::dcci(dst.GetPhyAddr(), entireType == CacheLine::ENTIRE_DATA_CACHE, src);
}

// --- across blocks: SyncAll (a real barrier: twin_blocks.h runs each block on its own thread) ----

namespace twin_detail {
inline void sync_all(evk_twin::Src src) {
    evk_twin::seen(src);
    evk_twin::hb_check_none_held("SyncAll", src);
    evk_twin::hb_barrier_all();  // the barrier waits for the block's pipes, as every block's
    auto hook = evk_twin::state().sync_all;
    if (!hook) evk_twin::fault("sync-all", "SyncAll", src, "SyncAll outside a launch");
    hook(src);
}
}  // namespace twin_detail

// Hardware barrier: every block of the launch must arrive before any continues.
template <bool isAIVOnly = true, class... Config>
inline void SyncAll(evk_twin::Src src = {}) {
    twin_detail::sync_all(src);
}

// Software barrier through global memory: gmWorkspace (zeroed, GetBlockNum() * 32 bytes) and
// ubWorkspace (GetBlockNum() * 32 bytes) hold the blocks' flags on the device.
template <bool isAIVOnly = true>
inline void SyncAll(const GlobalTensor<int32_t>& gmWorkspace, const LocalTensor<int32_t>& ubWorkspace,
                    const int32_t usedCores = 0, evk_twin::Src src = {}) {
    const int64_t blocks = GetBlockNum();
    const uint64_t need = uint64_t(blocks) * 32;
    evk_twin::check_gm_bounds(gmWorkspace.GetPhyAddr(), need, true, "SyncAll", src);  // each block its own flags
    ubWorkspace.check(need / sizeof(int32_t), "SyncAll", src, true, evk_twin::kNoAccess);
    if (usedCores != 0 && usedCores != blocks) {
        evk_twin::fault("not-in-twin", "SyncAll", src,
                        "the twin's soft SyncAll synchronises every block: usedCores must be 0 or GetBlockNum()");
    }
    twin_detail::sync_all(src);
}

// Fills `size` elements of global memory with `value` (as the device does, through the vector
// unit and a copy out: counted as UB->GM traffic).
template <class T>
inline void InitGlobalMemory(const GlobalTensor<T>& gm, const uint64_t size, const std::enable_if_t<true, T> value,
                             evk_twin::Src src = {}) {
    evk_twin::check_gm(gm.GetPhyAddr(), size * sizeof(T), true, "InitGlobalMemory", src);
    T* p = gm.GetPhyAddr();
    evk_twin::TrustedGm checked;  // not a raw access (twin_raw_gm.h)
    for (uint64_t i = 0; i < size; ++i) p[i] = value;
    auto& c = evk_twin::state().counters;
    c.ub_to_gm += size * sizeof(T);
    ++c.copies_out;
}

inline TPipeEvents* GetTPipePtr() {
    static TPipeEvents events;
    return &events;
}

}  // namespace AscendC
