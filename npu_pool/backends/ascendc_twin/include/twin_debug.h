// EvoKernel Ascend C twin: assertions, the kernel log, SoC state and small helpers.
//
// ascendc_assert(expr[, fmt, args...]), ASSERT(expr) and ASCENDC_ASSERT(expr, behavior) stop the
// launch with a fault of rule `assert` at the kernel's line when expr is false. On a device
// only ascendc_assert traps (with its message); ASSERT and ASCENDC_ASSERT compile to nothing in
// an NPU build and abort only in CANN's CPU-debug build, which the twin follows. KERNEL_LOG
// (level, fmt, args...), printf, PRINTF and DumpTensor write a note into the launch's profile
// (the device prints them).
#pragma once

#include "twin_core.h"

namespace evk_twin {

template <class... Args>
inline std::string format_message(const char* fmt, Args... args) {
    if (!fmt) return "";
    if constexpr (sizeof...(Args) == 0) {
        return fmt;
    } else {
        char buf[512];
        std::snprintf(buf, sizeof buf, fmt, args...);
        return buf;
    }
}

inline std::string& last_log() {
    static std::string text;
    return text;
}

template <class... Args>
inline void assert_that(bool ok, const char* expr, const char* api, Src src, const char* fmt = nullptr, Args... args) {
    seen(src);
    if (ok) return;
    std::string message = std::string("Assertion `") + expr + "' failed";
    const std::string detail = format_message(fmt, args...);
    if (!detail.empty()) message += ": " + detail;
    fault("assert", api, src, message);
}

template <class... Args>
inline void kernel_log(const char* level, Src src, const char* fmt, Args... args) {
    const char* slash = src.file ? std::strrchr(src.file, '/') : nullptr;
    last_log() = format_message(fmt, args...);
    note(std::string("KERNEL_LOG ") + level + " at " + (slash ? slash + 1 : src.file ? src.file : "?") + ":" +
         std::to_string(src.line) + " (block " + std::to_string(state().block_idx) + "): " + last_log());
}

}  // namespace evk_twin

#define ascendc_assert(expr, ...) \
    evk_twin::assert_that(static_cast<bool>(expr), #expr, "ascendc_assert", evk_twin::Src(), ##__VA_ARGS__)
#ifndef ASSERT
#define ASSERT(expr) evk_twin::assert_that(static_cast<bool>(expr), #expr, "ASSERT", evk_twin::Src())
#endif
#define ASCENDC_ASSERT(expr, behavior)                                                                  \
    do {                                                                                                \
        if (!(expr)) {                                                                                  \
            evk_twin::last_log().clear();                                                               \
            behavior;                                                                                   \
            evk_twin::assert_that(false, #expr, "ASCENDC_ASSERT", evk_twin::Src(),                      \
                                  evk_twin::last_log().empty() ? nullptr : evk_twin::last_log().c_str()); \
        }                                                                                               \
    } while (0)
#define KERNEL_LOG(level, fmt, ...) evk_twin::kernel_log(#level, evk_twin::Src(), fmt, ##__VA_ARGS__)

namespace AscendC {

enum class LogLevel : uint8_t { KERNEL_DEBUG = 0, KERNEL_INFO = 1, KERNEL_WARN = 2, KERNEL_ERROR = 3 };

// Resets the core's global settings a previous kernel may have left: atomic mode and the
// vector mask (the twin starts every block with them reset anyway).
inline void InitSocState() {
    evk_twin::State& s = evk_twin::state();
    s.atomic_add = false;
    s.mask_counter = false;
    s.mask_lo = s.mask_hi = ~uint64_t(0);
}

// printf / PRINTF from the kernel: a note in the profile, at the kernel's last located API call.
template <class... Args>
inline void printf(const char* fmt, Args... args) {
    evk_twin::kernel_log("printf", evk_twin::state().last, fmt, args...);
}
struct PrintfFunction {
    template <class... Args>
    void operator()(const char* fmt, Args... args) const {
        evk_twin::kernel_log("PRINTF", evk_twin::state().last, fmt, args...);
    }
};
inline constexpr PrintfFunction PRINTF{};

template <class T, class U>
__aicore__ inline constexpr auto DivCeil(T a, U b) {
    return (a + b - 1) / b;
}

template <class T, class U>
__aicore__ inline constexpr auto AlignUp(T a, U b) {
    return (a + b - 1) / b * b;
}

}  // namespace AscendC
