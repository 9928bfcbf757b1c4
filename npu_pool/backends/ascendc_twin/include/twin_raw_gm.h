// EvoKernel Ascend C twin: global memory read or written through raw pointers.
//
// A kernel may bypass GlobalTensor and touch global memory through a pointer it casts from a
// GM_ADDR (`((__gm__ float*)x)[i] = ...`, even `(float*)x`). The twin sees those accesses as
// a device's memcheck does: the npu-twin backend compiles the kernel's translation unit with
// g++'s address-sanitizer instrumentation in callback mode (build.py, RAW_GM_FLAGS), which
// turns every load and store the compiled code makes into a call `__asan_load4_noabort(addr)`
// (or store, of 1 to 16 bytes, or N). The twin defines those callbacks itself (no sanitizer
// runtime is linked): an access that touches no registered global tensor and no tensor's
// guard band returns at once; one that does goes through check_gm, the same bounds,
// read-only, ownership (block-overlap) and race (block-race) rules as a GlobalTensor access,
// named `raw load` / `raw store` at the kernel's source line (read from the library's line
// tables with addr2line, only when a fault is raised). Each checked access counts as a scalar
// global-memory access in the cost model, as a GetValue/SetValue does (except the tiling
// argument's reads, CopyTiling's).
//
// Guard bands: the launcher may declare bytes before and after a tensor as its guard band
// (evk_twin_guard): memory that belongs to the tensor's allocation and holds nothing else, so
// a raw access there is a `gm-bounds` fault ("byte 4096 of 'out' (4096 bytes), past its end").
// Past a guard band, or near a tensor without one, a raw access to memory that is not a
// registered tensor cannot be told from the kernel's own locals and is not checked.
//
// The twin's own API code touches global memory too (a Matmul reading A element by element,
// SetAtomicAdd's read-modify-write, GetValue): it has already checked its access with
// check_gm, so it runs inside a TrustedGm scope, which the callbacks skip.
//
// Only a launch's blocks are watched (Launch arms the watch around them): the host half and a
// direct-launch program's host code run unwatched, as on a device where they are host code.
#pragma once

#include <dlfcn.h>

#include <cstdio>
#include <string>
#include <vector>

#include "twin_core.h"

#define EVK_TWIN_NO_SANITIZE __attribute__((no_sanitize_address))

namespace evk_twin {

// What the callbacks watch: each registered tensor widened by its guard band (and by 15
// bytes before, so an access of up to 16 bytes that starts just before it is seen).
struct RawWatch {
    static constexpr uint32_t kSpans = 16;
    uint32_t spans = 0;                // 0 while no launch runs: every access returns at once
    uintptr_t lo[kSpans] = {};
    uintptr_t size[kSpans] = {};
    uintptr_t all_lo = 0, all_size = 0;  // one span around them all, when there are more
    bool many = false;
    uintptr_t tiling = 0;              // the launch's tiling argument: read by CopyTiling, never costed
    int trusted = 0;                   // > 0 inside the twin's own API code (TrustedGm)
    bool checking = false;             // inside a callback's check (its own accesses are not the kernel's)
};

struct GuardBand {
    uintptr_t begin;
    uint64_t before, after;
};

__attribute__((visibility("hidden"))) inline RawWatch raw_watch;

inline std::vector<GuardBand>& guard_bands() {
    static std::vector<GuardBand> bands;
    return bands;
}

// The twin's API code inside this scope has checked its global-memory access with check_gm.
struct TrustedGm {
    TrustedGm() { ++raw_watch.trusted; }
    ~TrustedGm() { --raw_watch.trusted; }
    TrustedGm(const TrustedGm&) = delete;
    TrustedGm& operator=(const TrustedGm&) = delete;
};

inline uint64_t guard_after(const Region& r) {
    for (const auto& g : guard_bands())
        if (g.begin == r.begin) return g.after;
    return 0;
}

inline uint64_t guard_before(const Region& r) {
    for (const auto& g : guard_bands())
        if (g.begin == r.begin) return g.before;
    return 0;
}

// Starts watching the registered tensors (called by Launch before the blocks run).
inline void arm_raw_watch() {
    RawWatch& w = raw_watch;
    const auto& regions = state().regions;
    w.spans = 0;
    w.many = regions.size() > RawWatch::kSpans;
    uintptr_t all_lo = ~uintptr_t(0), all_hi = 0;
    w.tiling = 0;
    for (const auto& r : regions) {
        if (r.name == "tiling") w.tiling = r.begin;
        const uintptr_t lo = r.begin - guard_before(r) - 15, hi = r.end + guard_after(r);
        all_lo = std::min(all_lo, lo);
        all_hi = std::max(all_hi, hi);
        if (w.spans < RawWatch::kSpans) {
            w.lo[w.spans] = lo;
            w.size[w.spans] = hi - lo;
            ++w.spans;
        }
    }
    w.all_lo = all_lo;
    w.all_size = all_hi > all_lo ? all_hi - all_lo : 0;
    if (w.many) {  // too many tensors to test one by one: one span around them all
        w.lo[0] = w.all_lo;
        w.size[0] = w.all_size;
        w.spans = 1;
    }
    w.trusted = 0;
    w.checking = false;
}

inline void disarm_raw_watch() { raw_watch.spans = 0; }

// The fast test every instrumented load and store makes: could [a, a + bytes) touch a watched tensor?
EVK_TWIN_NO_SANITIZE __attribute__((always_inline)) inline bool raw_watched(uintptr_t a) {
    const RawWatch& w = raw_watch;
    for (uint32_t i = 0; i < w.spans; ++i)
        if (a - w.lo[i] < w.size[i]) return true;
    return false;
}

// The kernel's source line of a code address, from the library's line tables (g++ -g1): the
// innermost kernel.cpp frame of addr2line's inline chain, e.g. "kernel.cpp:17"; "" if unknown.
EVK_TWIN_NO_SANITIZE inline std::string raw_site(const void* code) {
    Dl_info info{};
    if (!dladdr(code, &info) || !info.dli_fname || !info.dli_fbase) return "";
    const std::string path = info.dli_fname;
    if (path.find('\'') != std::string::npos) return "";
    char offset[32];
    std::snprintf(offset, sizeof offset, "0x%llx",
                  (unsigned long long)(reinterpret_cast<uintptr_t>(code) - 1 - reinterpret_cast<uintptr_t>(info.dli_fbase)));
    const std::string command = "addr2line -i -e '" + path + "' " + offset + " 2>/dev/null";
    FILE* pipe = popen(command.c_str(), "r");
    if (!pipe) return "";
    std::string found;
    char buf[512];
    while (std::fgets(buf, sizeof buf, pipe)) {
        std::string line = buf;  // "/path/kernel.cpp:17" or "...:17 (discriminator 2)"
        if (!line.empty() && line.back() == '\n') line.pop_back();
        const size_t note = line.find(" (discriminator");
        if (note != std::string::npos) line.resize(note);
        const size_t colon = line.rfind(':');
        if (colon == std::string::npos) continue;
        const int number = std::atoi(line.c_str() + colon + 1);
        const size_t slash = line.rfind('/', colon);
        const std::string base = line.substr(slash == std::string::npos ? 0 : slash + 1, colon - (slash == std::string::npos ? 0 : slash + 1));
        if (found.empty() && base == "kernel.cpp" && number > 0) found = base + ":" + std::to_string(number);
    }
    pclose(pipe);
    return found;
}

constexpr const char* kRawSiteMark = "<raw-access>";

// A fault raised for a raw access names the kernel's line instead of the mark.
[[noreturn]] EVK_TWIN_NO_SANITIZE inline void raise_at_site(Fault f, const void* code) {
    const std::string mark = std::string(kRawSiteMark) + ":0";
    const size_t at = f.line.find(mark);
    if (at != std::string::npos) {
        std::string site = raw_site(code);
        if (site.empty()) {  // no line tables: the last API call before the access
            const Src last = state().last;
            const char* file = last.file ? std::strrchr(last.file, '/') : nullptr;
            site = std::string(file ? file + 1 : (last.file ? last.file : "kernel.cpp")) + ":" + std::to_string(last.line);
            f.line += " (a raw pointer access after the API call on this line)";
        }
        f.line.replace(at, mark.size(), site);
    }
    throw f;
}

// The slow path: an access near a watched tensor, checked as a GlobalTensor access would be.
EVK_TWIN_NO_SANITIZE __attribute__((noinline)) inline void raw_access(uintptr_t a, uint64_t bytes, bool write,
                                                                       const void* code) {
    RawWatch& w = raw_watch;
    if (w.trusted > 0 || w.checking || w.spans == 0) return;
    w.checking = true;  // what the check itself loads and stores is not the kernel's
    State& s = state();
    const Region* inside = nullptr;
    const Region* guarded = nullptr;
    for (const auto& r : s.regions) {
        if (a < r.end && a + bytes > r.begin) inside = &r;
        if (a < r.end + guard_after(r) && a + bytes > r.begin - guard_before(r)) guarded = &r;
    }
    if (!inside && !guarded) {  // near a tensor, but neither in it nor in its guard band: not global memory we know
        w.checking = false;
        return;
    }
    const char* api = write ? "raw store" : "raw load";
    const Src site(kRawSiteMark, 0);
    const Src last = s.last;  // check_gm remembers its caller; the kernel's last API call stays the last
    try {
        if (!inside) {
            const Region& r = *guarded;
            const long long offset = static_cast<long long>(a) - static_cast<long long>(r.begin);
            fault("gm-bounds", api, site,
                  std::string(write ? "writes " : "reads ") + std::to_string(bytes) + " bytes at byte " + std::to_string(offset) +
                      " of '" + r.name + "' (" + std::to_string(r.end - r.begin) + " bytes), " +
                      (offset < 0 ? "before its start" : "past its end") +
                      ": outside every global tensor the kernel was given (bound a raw pointer's index by the "
                      "tensor's size; a device does not check it)");
        }
        check_gm(reinterpret_cast<const void*>(a), bytes, write, api, site);
        // on the device a scalar access to global memory, costed as GetValue/SetValue is (reading
        // the tiling argument is not: the cost model never charged it, whatever the kernel's form)
        if (inside->begin != w.tiling) ++s.counters.gm_scalar;
    } catch (const Fault& f) {
        s.last = last;
        w.checking = false;
        raise_at_site(f, code);
    }
    s.last = last;
    w.checking = false;
}

}  // namespace evk_twin

// The callbacks g++'s instrumentation calls (defined once per library: twin_runtime.h expands
// this). They must not be instrumented themselves.
#define EVK_TWIN_RAW_CALLBACK(kind, bytes, write)                                                               \
    extern "C" EVK_TWIN_NO_SANITIZE void __asan_##kind##bytes##_noabort(uintptr_t a) {                            \
        if (__builtin_expect(evk_twin::raw_watched(a), 0))                                                       \
            evk_twin::raw_access(a, bytes, write, __builtin_return_address(0));                                  \
    }
#define EVK_TWIN_RAW_GM_CALLBACKS                                                                                 \
    EVK_TWIN_RAW_CALLBACK(load, 1, false)                                                                        \
    EVK_TWIN_RAW_CALLBACK(load, 2, false)                                                                        \
    EVK_TWIN_RAW_CALLBACK(load, 4, false)                                                                        \
    EVK_TWIN_RAW_CALLBACK(load, 8, false)                                                                        \
    EVK_TWIN_RAW_CALLBACK(load, 16, false)                                                                       \
    EVK_TWIN_RAW_CALLBACK(store, 1, true)                                                                        \
    EVK_TWIN_RAW_CALLBACK(store, 2, true)                                                                        \
    EVK_TWIN_RAW_CALLBACK(store, 4, true)                                                                        \
    EVK_TWIN_RAW_CALLBACK(store, 8, true)                                                                        \
    EVK_TWIN_RAW_CALLBACK(store, 16, true)                                                                       \
    extern "C" EVK_TWIN_NO_SANITIZE void __asan_loadN_noabort(uintptr_t a, uintptr_t n) {                          \
        if (evk_twin::raw_watched(a) || evk_twin::raw_watched(a + n - 1))                                          \
            evk_twin::raw_access(a, n, false, __builtin_return_address(0));                                      \
    }                                                                                                              \
    extern "C" EVK_TWIN_NO_SANITIZE void __asan_storeN_noabort(uintptr_t a, uintptr_t n) {                         \
        if (evk_twin::raw_watched(a) || evk_twin::raw_watched(a + n - 1))                                          \
            evk_twin::raw_access(a, n, true, __builtin_return_address(0));                                       \
    }                                                                                                              \
    extern "C" void __asan_handle_no_return(void) {}                                                              \
    extern "C" void __asan_before_dynamic_init(const char*) {}                                                     \
    extern "C" void __asan_after_dynamic_init(void) {}
