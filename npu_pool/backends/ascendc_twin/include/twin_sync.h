// EvoKernel Ascend C twin: synchronisation between the core's pipelines.
//
// Blocks run their instructions in program order on the twin, so barriers and flags change no
// data; they are still checked where a device would hang: a WaitFlag with no SetFlag before it
// (for the same event and id) waits forever on an NPU, and faults here.
#pragma once

#include "twin_tensor.h"

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

inline TPipeEvents* GetTPipePtr() {
    static TPipeEvents events;
    return &events;
}

}  // namespace AscendC
