// EvoKernel's CPU twin of the Ascend C programming model: the shared state of one launch.
//
// Written by the EvoKernel authors from the public Ascend C API documentation; no CANN header
// or source was used. This file holds what every other twin header needs: the kernel-language
// keywords as plain C++, the per-SoC parameter table, source locations for fault messages, the
// fault itself, the global-memory regions a launch was given (with per-block write ownership),
// each block's Unified Buffer and the counters of the cost model.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

// --- the kernel language as plain C++ --------------------------------------------------------
#ifndef __global__
#define __global__
#endif
#ifndef __aicore__
#define __aicore__
#endif
#ifndef __gm__
#define __gm__
#endif
#ifndef __ubuf__
#define __ubuf__
#endif
#ifndef __vector__
#define __vector__
#endif
#ifndef __cube__
#define __cube__
#endif
#ifndef __mix__
#define __mix__(cube, vector)
#endif
#define GM_ADDR uint8_t __gm__*
// Kernel-type declarations of mixed cube/vector kernels: one twin block plays both cores.
#define KERNEL_TASK_TYPE_DEFAULT(type)
#define ASCEND_IS_AIV (true)
#define ASCEND_IS_AIC (true)

namespace evk_twin {

// --- where an API was called from (GCC builtins evaluated at the caller, C++17) ---------------
struct Src {
    const char* file;
    int line;
    constexpr Src(const char* f = __builtin_FILE(), int l = __builtin_LINE()) : file(f), line(l) {}
};

// --- SoC parameters: one table (values are a model's inputs, not measurements) ---------------
struct SocParams {
    const char* name;
    uint32_t ai_cores;         // cores a vector kernel's blocks spread over
    uint64_t ub_bytes;         // Unified Buffer per core
    uint64_t l0a_bytes, l0b_bytes, l0c_bytes, l1_bytes;
    double clock_ghz;          // AI core clock
    double gm_gbps;            // global-memory bandwidth shared by all cores (GB/s)
    double core_copy_gbps;     // what one core's copy engines move at most (GB/s)
    double copy_issue_us;      // fixed cost of one DataCopy instruction (latency not hidden)
    double vector_issue_cycles;  // fixed cost of one vector instruction
    double cube_macs_per_cycle_16;  // half/bfloat16 multiply-accumulates per cycle
    double cube_macs_per_cycle_32;  // float
    double launch_us;          // kernel launch overhead
};

inline const SocParams kSocTable[] = {
    //  name            cores  UB        L0A    L0B    L0C     L1       GHz  GM GB/s core GB/s issue vis  cube16 cube32 launch
    {"Ascend910B1",     24, 192 << 10, 64 << 10, 64 << 10, 128 << 10, 512 << 10, 1.80, 1600.0, 120.0, 0.25, 10.0, 4096.0, 1024.0, 3.0},
    {"Ascend910B2",     24, 192 << 10, 64 << 10, 64 << 10, 128 << 10, 512 << 10, 1.80, 1600.0, 120.0, 0.25, 10.0, 4096.0, 1024.0, 3.0},
    {"Ascend910B3",     20, 192 << 10, 64 << 10, 64 << 10, 128 << 10, 512 << 10, 1.80, 1600.0, 120.0, 0.25, 10.0, 4096.0, 1024.0, 3.0},
    {"Ascend910B4",     20, 192 << 10, 64 << 10, 64 << 10, 128 << 10, 512 << 10, 1.65, 800.0, 100.0, 0.25, 10.0, 4096.0, 1024.0, 3.0},
    {"Ascend910B",      24, 192 << 10, 64 << 10, 64 << 10, 128 << 10, 512 << 10, 1.80, 1600.0, 120.0, 0.25, 10.0, 4096.0, 1024.0, 3.0},
    {"Ascend910",       32, 256 << 10, 64 << 10, 64 << 10, 256 << 10, 1024 << 10, 1.00, 1200.0, 80.0, 0.30, 10.0, 4096.0, 0.0, 4.0},
    {"Ascend310P",       8, 256 << 10, 64 << 10, 64 << 10, 256 << 10, 1024 << 10, 1.08, 204.8, 50.0, 0.30, 10.0, 4096.0, 0.0, 4.0},
};

// --- a fault: the twin's equivalent of a device exception or silent corruption ---------------
struct Fault {
    std::string line;  // "twin fault [<rule>]: <API> at <file>:<line>: <message>"
};

// --- global memory the kernel was given, with per-block write ownership -----------------------
enum RegionAccess : int { kReadOnly = 0, kWritableOwned = 1, kWritableShared = 2 };

// --- the pipes of one core, and what the happens-before check (twin_hb.h) keeps ---------------
// Every API call is stamped with the pipe that runs it on a device; each pipe counts the
// instructions issued to it, and a vector clock per pipe says which of every pipe's
// instructions it knows to be complete (a flag carries one pipe's clock to another).
enum Pipe : uint8_t { kPipeS = 0, kPipeV, kPipeM, kPipeMTE1, kPipeMTE2, kPipeMTE3, kPipeFIX, kPipes };
inline const char* const kPipeNames[kPipes] = {"S", "V", "M", "MTE1", "MTE2", "MTE3", "FIX"};

struct Clock {
    uint32_t c[kPipes] = {};
    void join(const Clock& o) {
        for (int i = 0; i < kPipes; ++i) c[i] = std::max(c[i], o.c[i]);
    }
};

// One 32-byte block of the Unified Buffer: its last writer and each pipe's last reader since.
struct UbShadow {
    uint32_t w_epoch = 0, w_line = 0;
    uint8_t w_pipe = 0, written = 0;
    uint32_t r_epoch[kPipes] = {};
    uint32_t r_line[kPipes] = {};
};

struct PendingFlag {
    uint8_t event;
    int8_t id;
    Clock clock;
    Src at;
};

// A WaitFlag issued before its SetFlag: its pipe holds every later instruction until the set.
struct PendingWait {
    uint8_t event;
    int8_t id;
    Src at;
};

// One block's pipes: issued instructions, clocks, UB shadow, flags set and not yet waited for,
// and waits issued before their flag's set.
struct Hb {
    Clock vc[kPipes];
    uint32_t issued[kPipes] = {};
    std::vector<UbShadow> ub;
    std::vector<PendingFlag> flags;
    std::vector<PendingWait> waits;
};

// Who accessed a range of global memory: block, pipe, the pipe's instruction count, the line.
struct GmAccess {
    uint32_t block;
    uint8_t pipe;
    uint32_t epoch, line;
};
struct GmRange {
    uintptr_t end;
    GmAccess who;
};
using RangeMap = std::map<uintptr_t, GmRange>;  // non-overlapping [start, end) -> access

struct Region {
    uintptr_t begin, end;
    std::string name;
    int access;
    // since the last completed SyncAll: written ranges (blocks' writes never overlap, or a fault
    // stopped the launch) and, per (block << 3 | pipe), the ranges read
    RangeMap written;
    std::map<uint32_t, RangeMap> reads;
    // scalar writes (GlobalTensor::SetValue) still in a core's data cache: the whole launch
    RangeMap dirty;
    // the workspace: which 32-byte blocks anything wrote in this launch (uninit-read)
    std::vector<uint64_t> init;
};

// --- the cost model's counters (per block; summed and modelled by twin_runtime.h) -------------
enum VecClass : int { kArith = 0, kTranscendental, kReduce, kCast, kCompareSelect, kDuplicate, kVecClasses };
inline const char* const kVecClassNames[kVecClasses] = {"arith", "transcendental", "reduce", "cast",
                                                         "compare_select", "duplicate"};
// cycles per 256-byte repeat of each instruction class (a modelling assumption, see docs)
inline const double kVecClassCycles[kVecClasses] = {1.0, 4.0, 2.0, 1.0, 1.0, 1.0};
// Scalar math calls in the kernel's own code (expf, sqrtf, ... on the scalar unit, counted by
// twin_scalar_math.h): the scalar unit has no transcendental hardware, so each is a software
// routine of tens of dependent instructions (cycles per call: a modelling assumption, see docs).
enum ScalarMathClass : int { kScalarTranscendental = 0, kScalarRoot, kScalarMathClasses };
inline const char* const kScalarMathNames[kScalarMathClasses] = {"transcendental", "root"};
inline const double kScalarMathCycles[kScalarMathClasses] = {64.0, 24.0};

struct BlockCounters {
    uint64_t gm_to_ub = 0, ub_to_gm = 0, ub_to_ub = 0, gm_to_l1 = 0;
    uint64_t copies_in = 0, copies_out = 0, copies_local = 0;  // DataCopy instructions per direction
    uint64_t gm_scalar = 0;  // GlobalTensor GetValue/SetValue (each a scalar round trip to HBM)
    uint64_t repeats[kVecClasses] = {};
    uint64_t vector_instructions = 0;
    uint64_t scalar_ops = 0;  // LocalTensor GetValue/SetValue and other scalar-unit work we can see
    uint64_t scalar_math[kScalarMathClasses] = {};  // the kernel's own calls to scalar math functions
    uint64_t cube_macs_16 = 0, cube_macs_32 = 0;
    // double buffering: queues that moved tiles through two or more buffers, and how many tiles
    uint64_t enque_multi = 0, enque_single = 0;
};

// --- one launch's state ----------------------------------------------------------------------
struct State {
    SocParams soc = kSocTable[0];
    std::vector<Region> regions;
    std::string fault;
    std::string profile;
    std::vector<std::string> notes;  // non-fatal observations (dropped copy tails), bounded
    Src last{nullptr, 0};            // the kernel's last located API call
    // the running block
    int64_t block_idx = 0, block_num = 1;
    std::vector<uint8_t> ub_storage;  // this block's Unified Buffer (fresh per block)
    uint8_t* ub = nullptr;
    uint64_t ub_used = 0;             // bytes handed out by TPipe::InitBuffer
    uint8_t* sys_workspace = nullptr;
    bool atomic_add = false;
    Hb hb;                            // this block's pipes (twin_hb.h)
    BlockCounters counters;
    // the vector mask set outside instructions (SetVectorMask, SetMaskCount), used by the
    // mask/repeat forms called with isSetMask = false
    bool mask_counter = false;
    uint64_t mask_lo = ~uint64_t(0), mask_hi = ~uint64_t(0);
    std::vector<BlockCounters> per_block;
    // the launcher's barrier across blocks (SyncAll); set by evk_twin::Launch
    void (*sync_all)(Src) = nullptr;
    uint64_t tiling_key = 0;  // the host half's SetTilingKey (TILING_KEY_IS)
    // The compiler's automatic synchronisation (--cce-auto-sync, on by default in CANN's kernel
    // launch and custom operator projects) inserts the flags between PIPE_S and PIPE_V, MTE2,
    // MTE3: a scalar access never races with them. Off: PIPE_S is checked like the others.
    bool auto_sync = true;
    // A read of workspace bytes nothing wrote yet, in a launch of several blocks: a block-race if
    // another block writes them before the next SyncAll, else uninit-read (checked then).
    struct Suspect {
        uintptr_t begin, end;
        uint32_t block;
        std::string api;
        Src at;
        std::string what;
    };
    std::vector<Suspect> suspects;
    // A direct-launch program's launches before the running one (twin_direct.h): the profile
    // costs the whole program, as a device's stream runs its launches one after another.
    struct EarlierLaunches {
        uint32_t count = 0;
        double modelled_us = 0;
        BlockCounters total;
    } earlier;
    double last_launch_us = 0;  // the running launch's own modelled cost (build_profile)
    BlockCounters last_total;   // and its counters summed over blocks
};

inline State& state() {
    static State s;
    return s;
}

// Vector cores per AI core of the modelled SoC: two on the separated Atlas A2 family (Ascend910B,
// Ascend910_93: one cube and two vector cores), one where cube and vector share a core. A mixed
// kernel (one that drives the Matmul library) launched on N AI cores runs N times this many blocks.
inline uint32_t vector_cores_per_ai_core() {
    const char* name = state().soc.name ? state().soc.name : "";
    return std::strncmp(name, "Ascend910B", 10) == 0 || std::strncmp(name, "Ascend910_93", 12) == 0 ? 2u : 1u;
}

// The vector cores a vector kernel's blocks run on at once: AI cores x vector cores each (48 on
// Ascend910B1: 24 AI cores of one cube and two vector cores). GetCoreNumAiv() and GetCoreNum()
// report them, as the platform API documents for the separated architecture.
inline uint32_t vector_cores() { return state().soc.ai_cores * vector_cores_per_ai_core(); }

[[noreturn]] inline void fault(const char* rule, const char* api, Src src, const std::string& message) {
    // operator[] and operator() cannot take a location: name the last API call before them
    const bool located = src.file != nullptr;
    if (!located) src = state().last;
    const char* file = src.file ? src.file : "?";
    const char* slash = std::strrchr(file, '/');
    std::string text = "twin fault [";
    text += rule;
    text += "]: ";
    text += api;
    text += " at ";
    text += slash ? slash + 1 : file;
    text += ":" + std::to_string(src.line) + ": " + message;
    if (!located) text += " (in an expression after the API call on this line)";
    throw Fault{text};
}

// Remembers where the kernel last called the API (for faults raised where no location is known).
inline void seen(Src src) {
    if (src.file) state().last = src;
}

inline void note(const std::string& text) {
    auto& notes = state().notes;
    if (notes.size() < 8) notes.push_back(text);
}

// Fresh Unified Buffer for a block: filled with 0xFF so reading never-written UB gives NaN
// (uninitialised on-chip memory holds whatever the last kernel left there).
inline void fresh_ub() {
    State& s = state();
    s.ub_storage.assign(s.soc.ub_bytes + 64, 0xFF);
    uintptr_t raw = reinterpret_cast<uintptr_t>(s.ub_storage.data());
    s.ub = reinterpret_cast<uint8_t*>((raw + 63) & ~uintptr_t(63));
    s.ub_used = 0;
    s.atomic_add = false;
    s.last = Src(nullptr, 0);
    s.hb = Hb{};
    s.counters = BlockCounters{};
    s.mask_counter = false;
    s.mask_lo = s.mask_hi = ~uint64_t(0);
}

// What one block owns while it runs; a block waiting at SyncAll keeps it here while others run.
struct BlockSaved {
    int64_t block_idx = 0;
    std::vector<uint8_t> ub_storage;
    uint8_t* ub = nullptr;
    uint64_t ub_used = 0;
    bool atomic_add = false;
    Src last{nullptr, 0};
    Hb hb;
    BlockCounters counters;
    bool mask_counter = false;
    uint64_t mask_lo = 0, mask_hi = 0;
};

inline void swap_block(State& s, BlockSaved& b) {
    std::swap(s.block_idx, b.block_idx);
    s.ub_storage.swap(b.ub_storage);  // the buffer moves, so `ub` stays valid
    std::swap(s.ub, b.ub);
    std::swap(s.ub_used, b.ub_used);
    std::swap(s.atomic_add, b.atomic_add);
    std::swap(s.last, b.last);
    std::swap(s.hb, b.hb);
    std::swap(s.counters, b.counters);
    std::swap(s.mask_counter, b.mask_counter);
    std::swap(s.mask_lo, b.mask_lo);
    std::swap(s.mask_hi, b.mask_hi);
}

inline Region* find_region(uintptr_t p, uint64_t bytes) {
    for (auto& r : state().regions) {
        if (p >= r.begin && p + bytes <= r.end) return &r;
    }
    return nullptr;
}

inline std::string describe_address(uintptr_t p) {
    char buf[160];
    for (auto& r : state().regions) {
        if (p >= r.begin && p < r.end + 4096) {
            std::snprintf(buf, sizeof buf, "byte %lld of '%s' (%llu bytes)", (long long)(p - r.begin),
                          r.name.c_str(), (unsigned long long)(r.end - r.begin));
            return buf;
        }
    }
    std::snprintf(buf, sizeof buf, "address %p, in no tensor the kernel was given", (void*)p);
    return buf;
}

template <class...>
constexpr bool always_false = false;

}  // namespace evk_twin

#include "twin_hb.h"  // the happens-before check and check_gm
#include "twin_raw_gm.h"  // raw pointer accesses to global memory (TrustedGm for the API's own)
