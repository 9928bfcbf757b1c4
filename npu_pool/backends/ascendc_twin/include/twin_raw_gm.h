// EvoKernel Ascend C twin: global memory read or written through raw pointers.
//
// A kernel may bypass GlobalTensor and touch global memory through a pointer it casts from a
// GM_ADDR (`((__gm__ float*)x)[i] = ...`, even `(float*)x`). The twin sees those accesses as
// a device's memcheck does: the npu-twin backend compiles the kernel's translation unit with
// g++'s address-sanitizer instrumentation in callback mode (build.py, RAW_GM_FLAGS), which
// turns every load and store the compiled code makes into a call `__asan_load4_noabort(addr)`
// (or store, of 1 to 16 bytes, or N). The twin defines those callbacks itself (no sanitizer
// runtime is linked): an access that touches no registered global tensor and no tensor's
// guard band returns at once; one that does is checked by check_gm (twin_hb.h) as a PIPE_S
// access, as GlobalTensor::GetValue/SetValue are: bounds, read-only, ownership (block-overlap),
// races across blocks (block-race, reads recorded), across pipes (pipe-race, e.g. a raw store
// then a DataCopy out of the same bytes with auto-sync off), scalar stores left in the core's
// data cache (stale-cache: a raw store is a dirty line until DataCacheCleanAndInvalid), and the
// workspace's unwritten bytes (uninit-read). Faults are named `raw load` / `raw store` at the
// kernel's source line (read from the library's line tables with addr2line, only when a fault
// is raised). Each such access counts as a scalar global-memory access in the cost model, as
// GetValue/SetValue do (the tiling argument's reads, CopyTiling's, excepted, as before).
//
// Runs: a scalar loop makes millions of accesses, so consecutive ones are gathered. The
// running block's raw reads and its raw writes each extend a run (bytes [lo, hi) of one tensor,
// grown by accesses that continue it either way) that is checked with one check_gm when it
// ends: at an access that does not continue it, at the next API call that checks or orders
// global memory (check_gm, SetFlag/WaitFlag and the queues' flags, PipeBarrier<PIPE_ALL>,
// SyncAll, DataCacheCleanAndInvalid: raw_flush_pending), at the block's end. So a run holds
// only accesses with no API call between them: the pipes' clocks are the same for all of them,
// no other block runs meanwhile (the blocks take turns, twin_blocks.h), and the rules above give
// the verdict checking each access would give, at the line of the run's first access. The one
// order a run loses is its reads' against its writes; every rule but the workspace's
// uninit-read is blind to that order within one block and pipe (same block: no block-race;
// PIPE_S runs in order: no pipe-race; a core reads its own cached stores: no stale-cache), so
// raw accesses to the workspace are not gathered: each is checked at once. An access of bytes
// out of its tensor is checked at once too.
//
// A fault raised later by another access that names an earlier raw access ("that block 0 wrote
// at line N") gives N as the line of the last API call before that raw access (the raw access's
// own line is read only for the fault it raises itself).
//
// Guard bands: the launcher may declare bytes before and after a tensor as its guard band
// (evk_twin_guard): memory that belongs to the tensor's allocation and holds nothing else, so
// a raw access there is a `gm-bounds` fault ("byte 4096 of 'out' (4096 bytes), past its end").
// Past a guard band, or near a tensor without one, a raw access to memory that is not a
// registered tensor cannot be told from the kernel's own locals and is not checked.
//
// The twin's own API code touches global memory too (a Matmul reading A element by element,
// SetAtomicAdd's read-modify-write, GetValue): it has already checked its access with
// check_gm, so it runs inside a TrustedGm scope, which the callbacks skip. Only a launch's
// blocks are watched (Launch arms the watch around them): the host half and a direct-launch
// program's host code are host code, unwatched.
#pragma once

#include <dlfcn.h>

#include <algorithm>
#include <cctype>

#include <cstdio>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "twin_core.h"

#define EVK_TWIN_NO_SANITIZE __attribute__((no_sanitize_address))

namespace evk_twin {

// A watched tensor: the registered region, its guard bands, and [lo, lo + size), where an
// access may start to touch either (from 15 bytes before: accesses are up to 16 bytes).
struct RawSpan {
    uintptr_t lo, size;
    uintptr_t begin, end;    // the tensor
    uint64_t before, after;  // its guard bands (bytes)
    size_t region;           // index in state().regions
};

// Consecutive raw accesses of one direction by the running block, not yet checked.
struct RawRun {
    uintptr_t lo = 0, hi = 0;      // [lo, hi): the bytes, inside one tensor
    uintptr_t begin = 0, end = 0;  // that tensor
    bool atomic = false;           // writes under SetAtomicAdd (exempt from ownership)
    const void* code = nullptr;    // the run's first access, for the fault's line
    int line = 0;                  // the last API call's line before that access (check_gm records it)
    // Called from the callbacks' slow path: never instrumented (at -O0 they are not inlined).
    EVK_TWIN_NO_SANITIZE bool empty() const { return hi == lo; }
    EVK_TWIN_NO_SANITIZE bool covers(uintptr_t a, uint64_t bytes) const { return a >= lo && a + bytes <= hi; }
    // the access continues the run (adjacent or overlapping, inside its tensor)
    EVK_TWIN_NO_SANITIZE bool continued_by(uintptr_t a, uint64_t bytes) const {
        return !empty() && a <= hi && a + bytes >= lo && a >= begin && a + bytes <= end;
    }
};

struct RawWatch {
    static constexpr uint32_t kFast = 16;
    uint32_t fast = 0;  // spans the fast test tries; 0 while no launch runs
    uintptr_t lo[kFast] = {}, size[kFast] = {};
    std::vector<RawSpan> spans;
    uintptr_t tiling = 0;  // the launch's tiling argument: read by CopyTiling, never costed
    RawRun read, written;
    int trusted = 0;        // > 0 inside the twin's own API code (TrustedGm)
    bool checking = false;  // inside a check (its own loads and stores are not the kernel's)
    // Inside raw_access: the loads and stores of what it calls are the twin's own. Without it, a
    // helper the compiler did not inline (-O0) is instrumented, and where the watch's own memory
    // lies near a watched tensor (address layout varies from run to run) its access re-enters
    // raw_access without end (a stack overflow, seen as a flaky SIGSEGV).
    bool in_access = false;
    void (*runner_sync_all)(Src) = nullptr;  // the launch's barrier, where a block's turn ends
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

// --- where a fault of a raw access is reported -------------------------------------------------

// The build's table of the instrumented calls (raw_sites.py: `<library>.sites`, written before
// the sandbox's seal, when addr2line could still be run): return-address offset -> kernel line.
struct RawSites {
    bool read = false, found = false;
    std::vector<std::pair<unsigned long long, int>> sites;  // sorted by offset
};

// One table per library path: a static local of an inline function is one object for every twin
// library loaded in the process (g++ makes it a unique global symbol), so it is keyed by the library.
EVK_TWIN_NO_SANITIZE inline const RawSites& raw_sites(const std::string& library) {
    static std::mutex guard;
    static std::map<std::string, RawSites> tables;
    const std::lock_guard<std::mutex> hold(guard);
    RawSites& table = tables[library];
    if (!table.read) {
        table.read = true;
        if (FILE* file = std::fopen((library + ".sites").c_str(), "r")) {
            table.found = true;
            unsigned long long offset = 0;
            int line = 0;
            while (std::fscanf(file, "%llx %d", &offset, &line) == 2) table.sites.emplace_back(offset, line);
            std::fclose(file);
        }
    }
    return table;
}

// The kernel's source line of a code address, from the library's line tables (g++ -g1): the
// innermost kernel.cpp frame of addr2line's inline chain, e.g. "kernel.cpp:17"; "" if unknown.
// Looked up in the build's table where there is one (a sealed sandbox runs no addr2line).
EVK_TWIN_NO_SANITIZE inline std::string raw_site(const void* code) {
    Dl_info info{};
    if (!code || !dladdr(code, &info) || !info.dli_fname || !info.dli_fbase) return "";
    const std::string path = info.dli_fname;
    const unsigned long long returns =
        (unsigned long long)(reinterpret_cast<uintptr_t>(code) - reinterpret_cast<uintptr_t>(info.dli_fbase));
    const RawSites& table = raw_sites(path);
    if (table.found) {
        const auto at = std::lower_bound(table.sites.begin(), table.sites.end(), std::make_pair(returns, 0));
        return at != table.sites.end() && at->first == returns ? "kernel.cpp:" + std::to_string(at->second) : "";
    }
    if (path.find('\'') != std::string::npos) return "";
    char offset[32];
    std::snprintf(offset, sizeof offset, "0x%llx", returns - 1);
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
        const size_t from = slash == std::string::npos ? 0 : slash + 1;
        if (found.empty() && line.compare(from, colon - from, "kernel.cpp") == 0 && number > 0)
            found = "kernel.cpp:" + std::to_string(number);
    }
    pclose(pipe);
    return found;
}

constexpr const char* kRawSiteMark = "<raw-access>";

// A fault raised for a raw access names the kernel's line instead of the mark. The access was
// checked as Src(kRawSiteMark, `line`), `line` the last API call's (what check_gm records for
// it); the repair hints that name it as the later access ("before line N") get the real line.
[[noreturn]] EVK_TWIN_NO_SANITIZE inline void raise_at_site(Fault f, const void* code, int line) {
    const std::string mark = std::string(kRawSiteMark) + ":" + std::to_string(line);
    const size_t at = f.line.find(mark);
    if (at != std::string::npos) {
        std::string site = raw_site(code);
        if (site.empty()) {  // no line tables: the last API call before the access
            const Src last = state().last;
            const char* file = last.file ? std::strrchr(last.file, '/') : nullptr;
            site = std::string(file ? file + 1 : (last.file ? last.file : "kernel.cpp")) + ":" + std::to_string(last.line);
            f.line += " (a raw pointer access after the API call on this line)";
        } else {
            const std::string real = site.substr(site.rfind(':') + 1);
            for (const char* lead : {"before line ", "and line "}) {
                const std::string from = lead + std::to_string(line), to = lead + real;
                for (size_t k = f.line.find(from, at); k != std::string::npos; k = f.line.find(from, k + to.size())) {
                    const size_t past = k + from.size();
                    if (past < f.line.size() && std::isdigit(static_cast<unsigned char>(f.line[past]))) continue;
                    f.line.replace(k, from.size(), to);
                }
            }
        }
        f.line.replace(at, mark.size(), site);
    }
    throw f;
}

// check_gm for raw bytes (a run, or an access out of its tensor), faulting at `code`'s line;
// `line`: the last API call's before the access, recorded as the access's line.
EVK_TWIN_NO_SANITIZE inline void raw_check(uintptr_t a, uint64_t bytes, bool write, bool atomic, const void* code,
                                           int line) {
    RawWatch& w = raw_watch;
    State& s = state();
    const Src last = s.last;  // check_gm remembers its caller; the kernel's last API call stays the last
    const size_t suspects = s.suspects.size();
    const bool was_atomic = s.atomic_add;
    w.checking = true;
    s.atomic_add = atomic;  // a run's writes as they were made
    try {
        check_gm(reinterpret_cast<const void*>(a), bytes, write, write ? "raw store" : "raw load",
                 Src(kRawSiteMark, line), kPipeS);  // a scalar load or store
    } catch (const Fault& f) {
        s.last = last, s.atomic_add = was_atomic, w.checking = false;
        raise_at_site(f, code, line);
    }
    if (s.suspects.size() > suspects) {  // a workspace read judged at the barrier (uninit-read): its line now
        State::Suspect& u = s.suspects.back();
        const std::string site = raw_site(code);
        if (!site.empty()) {
            u.at = Src("kernel.cpp", std::atoi(site.c_str() + site.rfind(':') + 1));
        } else {
            u.at = last;
            u.what += " (a raw pointer access after the API call on this line)";
        }
    }
    s.last = last, s.atomic_add = was_atomic, w.checking = false;
}

EVK_TWIN_NO_SANITIZE inline void flush(RawRun& run, bool write) {
    if (run.empty()) return;
    const RawRun done = run;
    run = RawRun{};
    raw_check(done.lo, done.hi - done.lo, write, done.atomic, done.code, done.line);
}

// Checks the running block's pending runs (at SyncAll and at its end).
EVK_TWIN_NO_SANITIZE inline void flush_runs() {
    flush(raw_watch.written, true);
    flush(raw_watch.read, false);
}

// Before an API call checks or orders global memory (twin_hb.h): the runs so far first.
EVK_TWIN_NO_SANITIZE inline void raw_flush_pending() {
    const RawWatch& w = raw_watch;
    if (w.checking || (w.read.empty() && w.written.empty())) return;
    flush_runs();
}

// --- the launch's side: which tensors, which turns ---------------------------------------------

// Starts watching the registered tensors (called by Launch before the blocks run).
inline void arm_raw_watch() {
    RawWatch& w = raw_watch;
    const auto& regions = state().regions;
    w.spans.clear();
    w.tiling = 0;
    uintptr_t all_lo = ~uintptr_t(0), all_hi = 0;
    for (size_t i = 0; i < regions.size(); ++i) {
        const Region& r = regions[i];
        RawSpan span{0, 0, r.begin, r.end, 0, 0, i};
        for (const auto& g : guard_bands())
            if (g.begin == r.begin) span.before = g.before, span.after = g.after;
        span.lo = r.begin - span.before - 15;
        span.size = r.end + span.after - span.lo;
        all_lo = std::min(all_lo, span.lo);
        all_hi = std::max(all_hi, span.lo + span.size);
        if (r.name == "tiling") w.tiling = r.begin;
        w.spans.push_back(span);
    }
    w.fast = 0;
    if (w.spans.size() <= RawWatch::kFast) {
        for (const auto& span : w.spans) w.lo[w.fast] = span.lo, w.size[w.fast++] = span.size;
    } else if (!w.spans.empty()) {  // too many tensors to try one by one: one span around them all
        w.lo[0] = all_lo, w.size[0] = all_hi - all_lo, w.fast = 1;
    }
    w.read = w.written = RawRun{};
    w.trusted = 0;
    w.checking = false;
}

inline void disarm_raw_watch() { raw_watch.fast = 0; }

// A block's turn ends at SyncAll: its runs are checked (SyncAll's hb_barrier_all has already
// flushed them, before the barrier orders the pipes) and recorded before the other blocks run,
// so the runner's barrier_completed() (twin_hb.h), when every block waits, sees them and clears them.
inline void raw_sync_all(Src src) {
    flush_runs();
    raw_watch.runner_sync_all(src);
}

// Runs one block's body (Launch wraps each block in it): its runs start empty and are checked
// when it ends; the launch's SyncAll goes through raw_sync_all.
template <class Body>
void raw_watched_block(Body& body) {
    RawWatch& w = raw_watch;
    w.read = w.written = RawRun{};
    State& s = state();
    if (s.sync_all != nullptr && s.sync_all != &raw_sync_all) {
        w.runner_sync_all = s.sync_all;
        s.sync_all = &raw_sync_all;
    }
    body();
    flush_runs();
}

// --- the callbacks' two paths ------------------------------------------------------------------

// The fast test every instrumented load and store makes: could an access at `a` touch a watched tensor?
EVK_TWIN_NO_SANITIZE __attribute__((always_inline)) inline bool raw_watched(uintptr_t a) {
    const RawWatch& w = raw_watch;
    for (uint32_t i = 0; i < w.fast; ++i)
        if (a - w.lo[i] < w.size[i]) return true;
    return false;
}

// The slow path: an access near a watched tensor, gathered into a run or checked at once.
EVK_TWIN_NO_SANITIZE __attribute__((noinline)) inline void raw_access(uintptr_t a, uint64_t bytes, bool write,
                                                                       const void* code) {
    RawWatch& w = raw_watch;
    if (w.trusted > 0 || w.checking || w.in_access || w.fast == 0) return;
    struct InAccess {  // set for the call, cleared on return and when a fault unwinds it
        RawWatch& w;
        EVK_TWIN_NO_SANITIZE explicit InAccess(RawWatch& watch) : w(watch) { w.in_access = true; }
        EVK_TWIN_NO_SANITIZE ~InAccess() { w.in_access = false; }
    } in_access(w);
    State& s = state();
    RawRun& run = write ? w.written : w.read;
    if ((!write || run.atomic == s.atomic_add) && run.continued_by(a, bytes)) {  // the next element of a loop
        run.lo = std::min(run.lo, a);
        run.hi = std::max(run.hi, a + bytes);
        if (run.begin != w.tiling) ++s.counters.gm_scalar;
        return;
    }
    if (!write && w.written.covers(a, bytes)) {  // reading back what this block wrote
        ++s.counters.gm_scalar;
        return;
    }
    const RawSpan* inside = nullptr;
    const RawSpan* guarded = nullptr;
    for (const auto& span : w.spans) {
        if (a >= span.begin && a + bytes <= span.end) inside = &span;
        if (a < span.end + span.after && a + bytes > span.begin - span.before) guarded = &span;
    }
    if (!inside && !guarded) return;  // near a tensor, but neither in it nor in its guard band: not memory we know
    flush(run, write);  // the run ends here; the access starts the next one
    if (!inside) {  // in a guard band, or across a tensor's end
        const Region& r = s.regions[guarded->region];
        const long long offset = static_cast<long long>(a) - static_cast<long long>(r.begin);
        if (offset >= 0 && a < r.end) raw_check(a, bytes, write, s.atomic_add, code, s.last.line);  // across the end: check_gm words it
        const Src last = s.last;
        w.checking = true;
        try {
            fault("gm-bounds", write ? "raw store" : "raw load", Src(kRawSiteMark, 0),
                  std::string(write ? "writes " : "reads ") + std::to_string(bytes) + " bytes at byte " + std::to_string(offset) +
                      " of '" + r.name + "' (" + std::to_string(r.end - r.begin) + " bytes), " +
                      (offset < 0 ? "before its start" : "past its end") +
                      ": outside every global tensor the kernel was given (bound a raw pointer's index by the "
                      "tensor's size; a device does not check it)");
        } catch (const Fault& f) {
            s.last = last, w.checking = false;
            raise_at_site(f, code, 0);
        }
    }
    if (s.regions[inside->region].access == kWritableShared) {  // the workspace: each access at once (uninit-read)
        ++s.counters.gm_scalar;
        raw_check(a, bytes, write, s.atomic_add, code, s.last.line);
        return;
    }
    run = RawRun{a, a + bytes, inside->begin, inside->end, s.atomic_add, code, s.last.line};
    if (inside->begin != w.tiling) ++s.counters.gm_scalar;
}

}  // namespace evk_twin

// The callbacks g++'s instrumentation calls (defined once per library: twin_runtime.h expands
// this). They must not be instrumented themselves.
#define EVK_TWIN_RAW_CALLBACK(kind, bytes, write)                                                  \
    extern "C" EVK_TWIN_NO_SANITIZE void __asan_##kind##bytes##_noabort(uintptr_t a) {               \
        if (__builtin_expect(evk_twin::raw_watched(a), 0))                                          \
            evk_twin::raw_access(a, bytes, write, __builtin_return_address(0));                     \
    }
#define EVK_TWIN_RAW_GM_CALLBACKS                                                                    \
    EVK_TWIN_RAW_CALLBACK(load, 1, false)                                                           \
    EVK_TWIN_RAW_CALLBACK(load, 2, false)                                                           \
    EVK_TWIN_RAW_CALLBACK(load, 4, false)                                                           \
    EVK_TWIN_RAW_CALLBACK(load, 8, false)                                                           \
    EVK_TWIN_RAW_CALLBACK(load, 16, false)                                                          \
    EVK_TWIN_RAW_CALLBACK(store, 1, true)                                                           \
    EVK_TWIN_RAW_CALLBACK(store, 2, true)                                                           \
    EVK_TWIN_RAW_CALLBACK(store, 4, true)                                                           \
    EVK_TWIN_RAW_CALLBACK(store, 8, true)                                                           \
    EVK_TWIN_RAW_CALLBACK(store, 16, true)                                                          \
    extern "C" EVK_TWIN_NO_SANITIZE void __asan_loadN_noabort(uintptr_t a, uintptr_t n) {             \
        if (evk_twin::raw_watched(a) || evk_twin::raw_watched(a + n - 1))                             \
            evk_twin::raw_access(a, n, false, __builtin_return_address(0));                         \
    }                                                                                                 \
    extern "C" EVK_TWIN_NO_SANITIZE void __asan_storeN_noabort(uintptr_t a, uintptr_t n) {            \
        if (evk_twin::raw_watched(a) || evk_twin::raw_watched(a + n - 1))                             \
            evk_twin::raw_access(a, n, true, __builtin_return_address(0));                          \
    }                                                                                                 \
    extern "C" void __asan_handle_no_return(void) {}                                                 \
    extern "C" void __asan_before_dynamic_init(const char*) {}                                        \
    extern "C" void __asan_after_dynamic_init(void) {}
