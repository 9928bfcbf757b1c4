// EvoKernel Ascend C twin: the runtime a launcher uses (never included by kernels).
//
// Include this header in exactly one translation unit: the generated launcher, after the
// kernel. The interface, which the npu-twin backend relies on:
//
//   extern "C" void evk_twin_configure(uint64_t ub_bytes, uint32_t ai_cores, const char* soc);
//       Picks the SoC's row of the parameter table (twin_core.h; unknown names fall back to
//       Ascend910B with the given name) and overrides its UB bytes and AI cores where nonzero.
//   extern "C" void evk_twin_reset(void);
//       Forgets registered regions, counters, the fault and the profile.
//   extern "C" void evk_twin_register(const void* ptr, uint64_t bytes, const char* name, int writable);
//       Declares a global-memory tensor the kernel was given. writable: 0 read-only (writes
//       fault), 1 writable (an output), 2 the workspace: both checked across blocks (two
//       blocks writing, or one reading what another writes, between two SyncAlls fault) and
//       across pipes (twin_hb.h); the workspace's never-written bytes are uninit-read.
//       Accesses through the API, and raw pointer accesses (twin_raw_gm.h), outside every
//       registered region fault.
//   extern "C" void evk_twin_guard(const void* ptr, uint64_t before, uint64_t after);
//       Declares the `before` bytes before and `after` bytes after a registered tensor as its
//       guard band: allocated with it and holding nothing else, so a raw pointer access there
//       is a gm-bounds fault (twin_raw_gm.h). Forgotten by evk_twin_reset.
//   extern "C" void evk_twin_set_auto_sync(int on);
//       1 (the default): the compiler's --cce-auto-sync orders PIPE_S with V/MTE2/MTE3, as
//       CANN builds; 0: PIPE_S is checked like every pipe.
//   extern "C" const char* evk_twin_fault(void);
//       "" when the last launch ran clean, else one line
//       "twin fault [<rule>]: <API call> at kernel.cpp:<line>: <message> (block <b> of <n>)".
//   extern "C" const char* evk_twin_profile_json(void);
//       The modelled cost of the last launch as one JSON object (see build_profile below); in a
//       direct-launch program with several launches, `modelled_us` and the bytes moved are the
//       program's (every launch, one after another, as on a stream), with `launches` and
//       `last_launch_us`; the other figures are the last launch's.
//   template <class Fn> uint32_t evk_twin::Launch(uint32_t blockDim, Fn&& body, GM_ADDR workspace = nullptr);
//       Runs body() once per block, each on its own thread with its GetBlockIdx() and a fresh
//       Unified Buffer, one block at a time in block order (twin_blocks.h: a block waiting at
//       SyncAll lets the next one run); sets the system workspace to `workspace` first, as the
//       framework does; returns 0, or 1 after a fault (evk_twin_fault() says which), 2 after
//       another C++ exception escaped the kernel.
//
// The cost model (modelled, never measured): per block, copy-in time = GM->UB bytes over one
// core's copy bandwidth plus a fixed cost per DataCopy; copy-out likewise; vector time = sum of
// repeats times the cycles of their instruction class plus an issue cost per instruction;
// scalar time from counted scalar accesses; cube time from multiply-accumulates. A block whose
// queues all had two or more buffers overlaps its stages (double buffering): its time is the
// slowest stage plus the others' share of one tile, instead of their sum. Blocks are dealt to
// the SoC's vector cores round robin (AI cores x vector cores each); the launch takes the
// busiest core's time, at least the whole launch's bytes over the chip's global-memory
// bandwidth, plus the launch overhead.
#pragma once

#include <exception>

#include "kernel_operator.h"
#include "twin_blocks.h"

namespace evk_twin {

constexpr double kScalarCycles = 2.0;       // one LocalTensor GetValue/SetValue on the scalar unit
constexpr double kGmScalarUs = 0.1;         // one GlobalTensor GetValue/SetValue (a round trip to HBM)

inline void json_escape(std::string& out, const std::string& text) {
    for (char ch : text) {
        if (ch == '"' || ch == '\\') {
            out += '\\';
            out += ch;
        } else if (static_cast<unsigned char>(ch) < 0x20) {
            out += ' ';
        } else {
            out += ch;
        }
    }
}

struct BlockTime {
    double copy_in, copy_out, vector, scalar, cube, serial, modelled;
    bool double_buffered;
};

inline BlockTime block_time(const BlockCounters& c, const SocParams& soc) {
    BlockTime t{};
    const double per_us = soc.core_copy_gbps * 1e3;  // bytes per microsecond
    t.copy_in = double(c.gm_to_ub + c.gm_to_l1) / per_us + double(c.copies_in) * soc.copy_issue_us;
    t.copy_out = double(c.ub_to_gm) / per_us + double(c.copies_out) * soc.copy_issue_us;
    double cycles = double(c.vector_instructions) * soc.vector_issue_cycles + double(c.ub_to_ub) / 256.0;
    for (int k = 0; k < kVecClasses; ++k) cycles += double(c.repeats[k]) * kVecClassCycles[k];
    const double cycles_per_us = soc.clock_ghz * 1e3;
    t.vector = cycles / cycles_per_us;
    double math_cycles = 0;
    for (int k = 0; k < kScalarMathClasses; ++k) math_cycles += double(c.scalar_math[k]) * kScalarMathCycles[k];
    t.scalar = (double(c.scalar_ops) * kScalarCycles + math_cycles) / cycles_per_us + double(c.gm_scalar) * kGmScalarUs;
    t.cube = (double(c.cube_macs_16) / soc.cube_macs_per_cycle_16 +
              double(c.cube_macs_32) / (soc.cube_macs_per_cycle_32 > 0 ? soc.cube_macs_per_cycle_32 : soc.cube_macs_per_cycle_16 / 4)) /
             cycles_per_us;
    const double stages = t.copy_in + t.vector + t.copy_out;
    t.serial = stages + t.scalar + t.cube;
    t.double_buffered = c.enque_multi >= 2 && c.enque_single == 0;
    if (t.double_buffered) {
        // tiles ~ EnQue calls per queue (an input and an output queue per tile)
        const double tiles = std::max(1.0, double(c.enque_multi) / 2.0);
        const double slowest = std::max(t.copy_in, std::max(t.vector, t.copy_out));
        t.modelled = slowest + (stages - slowest) / tiles + t.scalar + t.cube;
    } else {
        t.modelled = t.serial;
    }
    return t;
}

inline void build_profile() {
    State& s = state();
    const SocParams& soc = s.soc;
    BlockCounters total;
    const uint32_t cores = vector_cores() ? vector_cores() : 1;  // a vector kernel's blocks run on the vector cores
    std::vector<double> core_us(cores, 0.0);
    double in = 0, out = 0, vec = 0, scal = 0, cube = 0, serial = 0, modelled_sum = 0;
    uint64_t db = 0;
    for (size_t b = 0; b < s.per_block.size(); ++b) {
        const BlockCounters& c = s.per_block[b];
        total.gm_to_ub += c.gm_to_ub;
        total.ub_to_gm += c.ub_to_gm;
        total.ub_to_ub += c.ub_to_ub;
        total.gm_to_l1 += c.gm_to_l1;
        total.copies_in += c.copies_in;
        total.copies_out += c.copies_out;
        total.copies_local += c.copies_local;
        total.gm_scalar += c.gm_scalar;
        for (int k = 0; k < kVecClasses; ++k) total.repeats[k] += c.repeats[k];
        total.vector_instructions += c.vector_instructions;
        total.scalar_ops += c.scalar_ops;
        for (int k = 0; k < kScalarMathClasses; ++k) total.scalar_math[k] += c.scalar_math[k];
        total.cube_macs_16 += c.cube_macs_16;
        total.cube_macs_32 += c.cube_macs_32;
        const BlockTime t = block_time(c, soc);
        core_us[b % core_us.size()] += t.modelled;
        in += t.copy_in;
        out += t.copy_out;
        vec += t.vector;
        scal += t.scalar;
        cube += t.cube;
        serial += t.serial;
        modelled_sum += t.modelled;
        db += t.double_buffered ? 1 : 0;
    }
    double busiest = 0;
    for (double u : core_us) busiest = std::max(busiest, u);
    const double hbm_bound = double(total.gm_to_ub + total.ub_to_gm + total.gm_to_l1) / (soc.gm_gbps * 1e3);
    const double this_launch = std::max(busiest, hbm_bound) + soc.launch_us;
    s.last_launch_us = this_launch;
    s.last_total = total;
    // a direct-launch program's earlier launches: its cost and traffic are the program's
    const double modelled = this_launch + s.earlier.modelled_us;
    total.gm_to_ub += s.earlier.total.gm_to_ub;
    total.ub_to_gm += s.earlier.total.ub_to_gm;
    total.ub_to_ub += s.earlier.total.ub_to_ub;
    total.gm_to_l1 += s.earlier.total.gm_to_l1;
    total.gm_scalar += s.earlier.total.gm_scalar;
    for (int k = 0; k < kScalarMathClasses; ++k) total.scalar_math[k] += s.earlier.total.scalar_math[k];
    const uint64_t blocks = s.per_block.size();
    char buf[2048];
    std::string j = "{\"modelled\": true, \"note\": \"modelled cost from counted work on the CPU twin, not a time measured on an NPU\"";
    std::snprintf(buf, sizeof buf,
                  ", \"modelled_us\": %.4f, \"blocks\": %llu, \"ai_cores\": %u, \"vector_cores\": %u, \"waves\": %llu"
                  ", \"bytes\": {\"GM->UB\": %llu, \"UB->GM\": %llu, \"UB->UB\": %llu, \"GM->L1\": %llu}"
                  ", \"copy_instructions\": {\"GM->UB\": %llu, \"UB->GM\": %llu, \"UB->UB\": %llu}"
                  ", \"gm_scalar_accesses\": %llu, \"scalar_ops\": %llu, \"vector_instructions\": %llu"
                  ", \"cube_macs\": {\"16bit\": %llu, \"fp32\": %llu}",
                  modelled, (unsigned long long)blocks, soc.ai_cores, cores, (unsigned long long)((blocks + cores - 1) / cores),
                  (unsigned long long)total.gm_to_ub, (unsigned long long)total.ub_to_gm, (unsigned long long)total.ub_to_ub,
                  (unsigned long long)total.gm_to_l1, (unsigned long long)total.copies_in, (unsigned long long)total.copies_out,
                  (unsigned long long)total.copies_local, (unsigned long long)total.gm_scalar,
                  (unsigned long long)total.scalar_ops, (unsigned long long)total.vector_instructions,
                  (unsigned long long)total.cube_macs_16, (unsigned long long)total.cube_macs_32);
    j += buf;
    if (s.earlier.count) {  // only a program with several launches says so
        std::snprintf(buf, sizeof buf, ", \"launches\": %u, \"last_launch_us\": %.4f", s.earlier.count + 1, this_launch);
        j += buf;
    }
    j += ", \"scalar_math_calls\": {";
    for (int k = 0; k < kScalarMathClasses; ++k) {
        std::snprintf(buf, sizeof buf, "%s\"%s\": %llu", k ? ", " : "", kScalarMathNames[k], (unsigned long long)total.scalar_math[k]);
        j += buf;
    }
    j += "}";
    j += ", \"vector_repeats\": {";
    for (int k = 0; k < kVecClasses; ++k) {
        std::snprintf(buf, sizeof buf, "%s\"%s\": %llu", k ? ", " : "", kVecClassNames[k], (unsigned long long)total.repeats[k]);
        j += buf;
    }
    std::snprintf(buf, sizeof buf,
                  "}, \"time_us\": {\"copy_in\": %.4f, \"vector\": %.4f, \"copy_out\": %.4f, \"scalar\": %.4f, \"cube\": %.4f"
                  ", \"serial_sum\": %.4f, \"overlap_credit\": %.4f, \"busiest_core\": %.4f, \"hbm_bound\": %.4f, \"launch\": %.4f}"
                  ", \"double_buffered_blocks\": %llu",
                  in, vec, out, scal, cube, serial, serial - modelled_sum, busiest, hbm_bound, soc.launch_us,
                  (unsigned long long)db);
    j += buf;
    std::snprintf(buf, sizeof buf,
                  ", \"soc\": {\"name\": \"%s\", \"ai_cores\": %u, \"ub_bytes\": %llu, \"clock_ghz\": %.3f, \"gm_gbps\": %.1f"
                  ", \"core_copy_gbps\": %.1f, \"copy_issue_us\": %.3f, \"vector_issue_cycles\": %.1f"
                  ", \"cube_macs_per_cycle_16\": %.0f, \"cube_macs_per_cycle_32\": %.0f, \"launch_us\": %.2f"
                  ", \"scalar_cycles\": %.1f, \"gm_scalar_us\": %.3f, \"vector_class_cycles\": {",
                  soc.name, soc.ai_cores, (unsigned long long)soc.ub_bytes, soc.clock_ghz, soc.gm_gbps, soc.core_copy_gbps,
                  soc.copy_issue_us, soc.vector_issue_cycles, soc.cube_macs_per_cycle_16, soc.cube_macs_per_cycle_32,
                  soc.launch_us, kScalarCycles, kGmScalarUs);
    j += buf;
    for (int k = 0; k < kVecClasses; ++k) {
        std::snprintf(buf, sizeof buf, "%s\"%s\": %.1f", k ? ", " : "", kVecClassNames[k], kVecClassCycles[k]);
        j += buf;
    }
    j += "}, \"scalar_math_cycles\": {";
    for (int k = 0; k < kScalarMathClasses; ++k) {
        std::snprintf(buf, sizeof buf, "%s\"%s\": %.1f", k ? ", " : "", kScalarMathNames[k], kScalarMathCycles[k]);
        j += buf;
    }
    j += "}}, \"notes\": [";
    for (size_t i = 0; i < s.notes.size(); ++i) {
        j += i ? ", \"" : "\"";
        json_escape(j, s.notes[i]);
        j += "\"";
    }
    j += "]}";
    s.profile = j;
}

inline std::string& soc_name_storage() {
    static std::string name;
    return name;
}

template <class Fn>
uint32_t Launch(uint32_t blockDim, Fn&& body, GM_ADDR workspace = nullptr) {
    State& s = state();
    s.fault.clear();
    s.notes.clear();
    s.per_block.clear();
    s.profile.clear();
    launch_tracking_begin();
    if (blockDim == 0 || blockDim > 65535) {
        s.fault = "twin fault [invalid-argument]: Launch at launcher.cpp:0: block_dim " + std::to_string(blockDim) +
                  " outside [1, 65535]";
        build_profile();
        return 1;
    }
    s.block_num = blockDim;
    // the framework sets the system workspace before the kernel runs (SetSysWorkspace by hand
    // still works); the kernel's workspace argument starts with it
    s.sys_workspace = workspace;
    // raw pointer accesses of the blocks are checked (twin_raw_gm.h), per block and turn
    BlockRunner runner(blockDim, [&body] { raw_watched_block(body); });
    arm_raw_watch();
    const uint32_t rc = runner.run(s.fault);
    disarm_raw_watch();
    build_profile();
    return rc;
}

}  // namespace evk_twin

extern "C" void evk_twin_configure(uint64_t ub_bytes, uint32_t ai_cores, const char* soc) {
    evk_twin::State& s = evk_twin::state();
    const std::string want = soc ? soc : "";
    s.soc = evk_twin::kSocTable[0];
    bool found = false;
    for (const auto& row : evk_twin::kSocTable) {
        if (want == row.name) {
            s.soc = row;
            found = true;
            break;
        }
    }
    if (!found) {
        for (const auto& row : evk_twin::kSocTable) {  // e.g. "Ascend910B2C" -> Ascend910B2, "Ascend310P3" -> Ascend310P
            if (!want.empty() && want.rfind(row.name, 0) == 0 && std::strlen(row.name) > 9) {
                s.soc = row;
                found = true;
            }
        }
    }
    if (!found && !want.empty()) {
        evk_twin::soc_name_storage() = want;
        s.soc.name = evk_twin::soc_name_storage().c_str();
    }
    if (ub_bytes) s.soc.ub_bytes = ub_bytes;
    if (ai_cores) s.soc.ai_cores = ai_cores;
}

extern "C" void evk_twin_reset(void) {
    evk_twin::State& s = evk_twin::state();
    s.regions.clear();
    s.fault.clear();
    s.profile.clear();
    s.notes.clear();
    s.per_block.clear();
    s.counters = evk_twin::BlockCounters{};
    s.sys_workspace = nullptr;
    s.earlier = {};
    evk_twin::guard_bands().clear();
}

extern "C" void evk_twin_register(const void* ptr, uint64_t bytes, const char* name, int writable) {
    evk_twin::Region r;
    r.begin = reinterpret_cast<uintptr_t>(ptr);
    r.end = r.begin + bytes;
    r.name = name ? name : "tensor";
    r.access = writable;
    evk_twin::state().regions.push_back(std::move(r));
}

extern "C" void evk_twin_guard(const void* ptr, uint64_t before, uint64_t after) {
    evk_twin::guard_bands().push_back({reinterpret_cast<uintptr_t>(ptr), before, after});
}

// 1: the compiler's automatic synchronisation between PIPE_S and V/MTE2/MTE3 (CANN's default);
// 0: a kernel built without it (PIPE_S checked like every pipe).
extern "C" void evk_twin_set_auto_sync(int on) { evk_twin::state().auto_sync = on != 0; }

extern "C" const char* evk_twin_fault(void) { return evk_twin::state().fault.c_str(); }

// The callbacks of the kernel's instrumented loads and stores (twin_raw_gm.h).
EVK_TWIN_RAW_GM_CALLBACKS

extern "C" const char* evk_twin_profile_json(void) { return evk_twin::state().profile.c_str(); }
