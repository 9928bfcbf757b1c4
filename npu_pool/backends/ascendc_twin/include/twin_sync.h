// EvoKernel Ascend C twin: synchronisation between the core's pipelines.
//
// Blocks run their instructions in program order on the twin, so barriers and flags change no
// data; they are still checked where a device would hang: a WaitFlag with no SetFlag before it
// (for the same event and id) waits forever on an NPU, and faults here.
#pragma once

#include "twin_pipe.h"

namespace AscendC {

template <pipe_t pipe>
inline void PipeBarrier() {}

namespace twin_detail {
inline int32_t& flag_slot(HardEvent e, int32_t id, const char* api, evk_twin::Src src) {
    if (id < 0 || id > 7) {
        evk_twin::fault("invalid-argument", api, src, "event id " + std::to_string(id) + " outside [0, 7]");
    }
    return evk_twin::state().flags[static_cast<int>(e)][id];
}
}  // namespace twin_detail

template <HardEvent event>
inline void SetFlag(int32_t eventID, evk_twin::Src src = {}) {
    ++twin_detail::flag_slot(event, eventID, "SetFlag", src);
}

template <HardEvent event>
inline void WaitFlag(int32_t eventID, evk_twin::Src src = {}) {
    int32_t& pending = twin_detail::flag_slot(event, eventID, "WaitFlag", src);
    if (pending <= 0) {
        evk_twin::fault("sync-order", "WaitFlag", src,
                        "WaitFlag for event id " + std::to_string(eventID) +
                            " with no SetFlag of the same HardEvent before it (the device would wait forever)");
    }
    --pending;
}

// --- across blocks: SyncAll (a real barrier: twin_blocks.h runs each block on its own thread) ----

namespace twin_detail {
inline void sync_all(evk_twin::Src src) {
    evk_twin::seen(src);
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
    evk_twin::check_gm(gmWorkspace.GetPhyAddr(), need, true, "SyncAll", src);
    ubWorkspace.check(need / sizeof(int32_t), "SyncAll", src);
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
