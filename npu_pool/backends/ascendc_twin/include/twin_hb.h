// EvoKernel Ascend C twin: the happens-before check across a core's pipes, and global memory's
// checks across blocks (check_gm).
//
// Data stays eager: every API call still runs at once, in program order. Beside it, each call is
// stamped with the pipe that runs it on a device (PIPE_MTE2 copies in, PIPE_MTE3 copies out,
// PIPE_V computes, PIPE_S reads and writes scalars, PIPE_FIX writes the cube's results), and a
// vector clock per pipe says which instructions of every pipe it knows to be complete:
//
//   - V, S and M run their own instructions in order (the compiler inserts PIPE_V barriers
//     between dependent vector instructions); MTE2 and MTE3 may overlap their own transfers
//     ("PIPE_MTE2/PIPE_MTE3 need the developer's synchronisation where addresses overlap"), so a
//     copy is ordered after an earlier one of the same pipe only by PipeBarrier<PIPE_MTE2/3>,
//     PipeBarrier<PIPE_ALL> or a flag round trip through another pipe.
//   - SetFlag<X_Y> captures X's clock once X's earlier instructions are complete; WaitFlag<X_Y>
//     makes Y wait for it (a wait on PIPE_S stalls the scalar unit, which issues every pipe's
//     instructions: all pipes learn it). PipeBarrier<PIPE_ALL> and SyncAll complete everything.
//     A flag is one bit: a set before the wait that clears the previous one is lost; a wait
//     issued before its set holds its own pipe (see "flags" below).
//   - TQue carries the framework's flags: EnQue/DeQue order the producer's pipe before the
//     consumer's (VECIN: MTE2 -> V, VECOUT: V -> MTE3, TQueBind<VECIN, VECOUT>: MTE2 -> MTE3),
//     FreeTensor/AllocTensor the consumer's before the producer's next use of the buffer.
//   - With the compiler's automatic synchronisation (State::auto_sync, as CANN builds by
//     default) PIPE_S never races with V, MTE2 or MTE3: the compiler inserts those flags.
//
// Shadow state per 32-byte UB block records the last writer and each pipe's last read; an access
// with a conflicting earlier access its pipe does not know to be complete is a `pipe-race`
// naming both lines and both pipes. A read of UB nothing wrote in this launch is `uninit-read`.
// Global memory the kernel may write (outputs, workspace) keeps ranges written and read per
// block and pipe (since the last SyncAll), scalar writes still in a core's data cache, and
// which workspace bytes were written at all.
#pragma once

#include "twin_core.h"

namespace evk_twin {

// Checks the running block's pending raw pointer runs (twin_raw_gm.h) before anything that
// orders or records global-memory accesses, so raw accesses are checked in program order with
// the API's: every GM check, SetFlag/WaitFlag and the queues' flags, barriers, DataCacheCleanAndInvalid.
inline void raw_flush_pending();

// Refuses an instruction of a pipe a WaitFlag still holds (defined with the flags below).
inline void hb_check_held(int pipe, const char* api, Src src);

// HardEvent's values in twin_pipe.h's order: source and destination pipe of each.
struct EventPipes {
    uint8_t src, dst;
    const char* name;
};
inline const EventPipes kEvents[] = {
    {kPipeMTE2, kPipeMTE1, "MTE2_MTE1"}, {kPipeMTE1, kPipeMTE2, "MTE1_MTE2"}, {kPipeMTE1, kPipeM, "MTE1_M"},
    {kPipeM, kPipeMTE1, "M_MTE1"},       {kPipeMTE2, kPipeV, "MTE2_V"},       {kPipeV, kPipeMTE2, "V_MTE2"},
    {kPipeMTE3, kPipeV, "MTE3_V"},       {kPipeV, kPipeMTE3, "V_MTE3"},       {kPipeM, kPipeV, "M_V"},
    {kPipeV, kPipeM, "V_M"},             {kPipeV, kPipeV, "V_V"},             {kPipeMTE3, kPipeMTE1, "MTE3_MTE1"},
    {kPipeMTE1, kPipeMTE3, "MTE1_MTE3"}, {kPipeMTE1, kPipeV, "MTE1_V"},       {kPipeMTE2, kPipeM, "MTE2_M"},
    {kPipeM, kPipeMTE2, "M_MTE2"},       {kPipeV, kPipeMTE1, "V_MTE1"},       {kPipeM, kPipeFIX, "M_FIX"},
    {kPipeFIX, kPipeM, "FIX_M"},         {kPipeMTE3, kPipeMTE2, "MTE3_MTE2"}, {kPipeMTE2, kPipeMTE3, "MTE2_MTE3"},
    {kPipeS, kPipeV, "S_V"},             {kPipeV, kPipeS, "V_S"},             {kPipeS, kPipeMTE2, "S_MTE2"},
    {kPipeMTE2, kPipeS, "MTE2_S"},       {kPipeS, kPipeMTE3, "S_MTE3"},       {kPipeMTE3, kPipeS, "MTE3_S"},
    {kPipeMTE2, kPipeFIX, "MTE2_FIX"},   {kPipeFIX, kPipeMTE2, "FIX_MTE2"},   {kPipeFIX, kPipeS, "FIX_S"},
    {kPipeM, kPipeS, "M_S"},             {kPipeFIX, kPipeMTE3, "FIX_MTE3"},   {kPipeMTE1, kPipeFIX, "MTE1_FIX"},
    {kPipeFIX, kPipeMTE1, "FIX_MTE1"},   {kPipeFIX, kPipeFIX, "FIX_FIX"},
};
constexpr int kEventCount = sizeof(kEvents) / sizeof(kEvents[0]);

inline const char* event_name(int src, int dst) {
    for (const auto& e : kEvents)
        if (e.src == src && e.dst == dst) return e.name;
    return nullptr;
}

inline bool in_order(int pipe) { return pipe == kPipeS || pipe == kPipeV || pipe == kPipeM; }

// One instruction issued to `pipe`: its number on that pipe.
inline uint32_t hb_issue(int pipe) {
    Hb& h = state().hb;
    const uint32_t e = ++h.issued[pipe];
    if (in_order(pipe)) h.vc[pipe].c[pipe] = e;
    return e;
}

// The clock a flag set now on `pipe` carries: everything `pipe` issued so far, complete.
inline Clock hb_capture(int pipe) {
    raw_flush_pending();
    Hb& h = state().hb;
    Clock c = h.vc[pipe];
    c.c[pipe] = h.issued[pipe];
    return c;
}

// `pipe` waits for `clock`; a wait on PIPE_S stalls the scalar unit, so every pipe learns it.
inline void hb_join(int pipe, const Clock& clock) {
    raw_flush_pending();
    Hb& h = state().hb;
    if (pipe == kPipeS) {
        for (auto& vc : h.vc) vc.join(clock);
    } else {
        h.vc[pipe].join(clock);
    }
}

// PipeBarrier<PIPE_ALL> (and SyncAll): every pipe's issued instructions complete before any next.
inline void hb_barrier_all() {
    raw_flush_pending();
    Hb& h = state().hb;
    Clock all;
    for (const auto& vc : h.vc) all.join(vc);
    for (int p = 0; p < kPipes; ++p) all.c[p] = h.issued[p];
    for (auto& vc : h.vc) vc = all;
}

inline uint32_t line_of(Src src) { return src.file ? static_cast<uint32_t>(src.line) : static_cast<uint32_t>(state().last.line); }

// The one-line repair for a race between an earlier access on pipe `a` (line la) and one now on `q`.
inline std::string race_hint(int a, uint32_t la, int q, uint32_t lq, bool ub) {
    const std::string pa = std::string("PIPE_") + kPipeNames[a];
    if (a == q) {
        return "add PipeBarrier<" + pa + ">() between line " + std::to_string(la) + " and line " + std::to_string(lq) +
               " (transfers of one MTE pipe may overlap)";
    }
    if (const char* ev = event_name(a, q)) {
        return std::string("add SetFlag<HardEvent::") + ev + ">(id) after line " + std::to_string(la) +
               " and WaitFlag<HardEvent::" + ev + ">(id) before line " + std::to_string(lq) +
               (ub ? " (or pass the tensor through a TQue, whose EnQue/DeQue carry that flag)" : "");
    }
    return "add PipeBarrier<PIPE_ALL>() between line " + std::to_string(la) + " and line " + std::to_string(lq);
}

// Whether the compiler's automatic synchronisation orders pipes a and q: PIPE_S with V, MTE2, MTE3.
inline bool auto_sync_pair(int a, int q) {
    const int other = a == kPipeS ? q : q == kPipeS ? a : -1;
    return other == kPipeV || other == kPipeMTE2 || other == kPipeMTE3;
}

// The compiler's automatic synchronisation between PIPE_S and V/MTE2/MTE3: the flag it inserts.
inline bool hb_auto_sync(int a, uint32_t e, int q) {
    if (!state().auto_sync || !auto_sync_pair(a, q)) return false;
    (void)e;
    hb_join(q, hb_capture(a));  // the compiler sets the flag just before the wait: a's clock now
    return true;
}

// Where the build option decided a race, the feedback says so (the user's setting, or the
// exported project's CMake option).
inline std::string auto_sync_said(int a, int q) {
    if (state().auto_sync || !auto_sync_pair(a, q)) return "";
    return " (checked as built with --cce-auto-sync=off, the setting harness.npu_twin.auto_sync: false; CANN's "
           "default build inserts this flag itself)";
}

// An earlier access (pipe a, instruction e, line la) conflicts with one now on pipe q: ordered,
// or ordered by the compiler, or a race.
inline void hb_conflict(int a, uint32_t e, uint32_t la, bool a_write, int q, bool q_write, const char* api, Src src,
                        const std::string& where) {
    if (state().hb.vc[q].c[a] >= e) return;
    if (hb_auto_sync(a, e, q)) return;
    const uint32_t lq = line_of(src);
    fault("pipe-race", api, src,
          std::string("PIPE_") + kPipeNames[q] + (q_write ? " writes " : " reads ") + where + " that PIPE_" +
              kPipeNames[a] + (a_write ? " wrote" : " read") + " at line " + std::to_string(la) +
              ", with nothing ordering the two (the pipes run concurrently on the device): " +
              race_hint(a, la, q, lq, where.compare(0, 2, "UB") == 0) + auto_sync_said(a, q));
}

// --- the Unified Buffer ------------------------------------------------------------------------

// An access by `pipe` to `bytes` of UB at `p` (one instruction's operand).
inline void hb_ub(const void* p, uint64_t bytes, bool write, int pipe, const char* api, Src src) {
    if (bytes == 0) return;
    State& s = state();
    Hb& h = s.hb;
    hb_check_held(pipe, api, src);
    const uint64_t off = static_cast<uint64_t>(reinterpret_cast<const uint8_t*>(p) - s.ub);
    const uint64_t b0 = off / 32, b1 = (off + bytes + 31) / 32;
    if (h.ub.size() < b1) h.ub.resize(std::max<uint64_t>(b1, (s.ub_used + 31) / 32));
    const uint32_t e = hb_issue(pipe), line = line_of(src);
    for (uint64_t b = b0; b < b1; ++b) {
        UbShadow& u = h.ub[b];
        if (!write) {
            if (!u.written) {
                fault("uninit-read", api, src,
                      "PIPE_" + std::string(kPipeNames[pipe]) + " reads UB bytes " + std::to_string(b * 32) + ".." +
                          std::to_string(b * 32 + 31) + " (local tensor at UB byte " + std::to_string(off) +
                          ") that nothing wrote in this launch; on a device they hold what an earlier kernel left: "
                          "write them first (DataCopy, Duplicate) or read only what was written");
            }
            if (u.w_pipe != pipe || !in_order(pipe)) {
                hb_conflict(u.w_pipe, u.w_epoch, u.w_line, true, pipe, false, api, src,
                            "UB bytes " + std::to_string(b * 32) + ".." + std::to_string(b * 32 + 31));
            }
            u.r_epoch[pipe] = e;
            u.r_line[pipe] = line;
        } else {
            // the reads since the write first: a flag from their pipe also orders the write they saw
            for (int a = 0; a < kPipes; ++a) {
                if (u.r_epoch[a] && a != pipe) {
                    hb_conflict(a, u.r_epoch[a], u.r_line[a], false, pipe, true, api, src,
                                "UB bytes " + std::to_string(b * 32) + ".." + std::to_string(b * 32 + 31));
                }
            }
            if (u.written && (u.w_pipe != pipe || !in_order(pipe))) {
                hb_conflict(u.w_pipe, u.w_epoch, u.w_line, true, pipe, true, api, src,
                            "UB bytes " + std::to_string(b * 32) + ".." + std::to_string(b * 32 + 31));
            }
            u = UbShadow{};
            u.written = 1;
            u.w_pipe = static_cast<uint8_t>(pipe);
            u.w_epoch = e;
            u.w_line = line;
        }
    }
}

// --- flags ---------------------------------------------------------------------------------------
//
// A flag is one bit per (HardEvent, id) (atlasascendc_api_07_0181: SetFlag sets it to 1 once the
// source pipe's earlier instructions are complete; WaitFlag, when its pipe reaches it, blocks that
// pipe's later instructions while it is 0, then clears it). The scalar unit issues every
// instruction in order to the pipes' queues, so a WaitFlag issued before its SetFlag only holds
// its own pipe: legal unless that pipe is PIPE_S (the scalar unit would stall before issuing the
// set). The twin runs instructions in the kernel's order, so an instruction of a held pipe before
// the set, which a device would run after it, is refused (see docs/ascendc_twin.md).

inline std::string flag_name(int event, int32_t id) {
    return std::string(kEvents[event].name) + ">(" + std::to_string(id) + ")";
}

// An instruction issued to `pipe` while a WaitFlag holds it (its SetFlag not issued yet).
inline void hb_check_held(int pipe, const char* api, Src src) {
    for (const PendingWait& w : state().hb.waits) {
        if (kEvents[w.event].dst != pipe) continue;
        const std::string pn = std::string("PIPE_") + kPipeNames[pipe];
        fault("sync-order", api, src,
              "this " + pn + " instruction comes after WaitFlag<HardEvent::" + flag_name(w.event, w.id) + " at line " +
                  std::to_string(w.at.line) + ", whose SetFlag the kernel has not issued yet: on the device " + pn +
                  " holds it until that SetFlag runs (or forever, if none does), so it would run after the "
                  "instructions between, out of the kernel's order; issue SetFlag<HardEvent::" +
                  flag_name(w.event, w.id) + " (after what it must follow) before line " + std::to_string(line_of(src)));
    }
}

// PipeBarrier<PIPE_ALL> and SyncAll wait for every pipe: a pipe held by a wait whose set comes later never completes.
inline void hb_check_none_held(const char* api, Src src) {
    const auto& waits = state().hb.waits;
    if (waits.empty()) return;
    const PendingWait& w = waits.front();
    fault("sync-order", api, src,
          std::string(api) + " waits for every pipe, and PIPE_" + kPipeNames[kEvents[w.event].dst] +
              " is held by WaitFlag<HardEvent::" + flag_name(w.event, w.id) + " at line " + std::to_string(w.at.line) +
              " until a SetFlag the kernel issues only after this line: the device would wait forever");
}

// The same flag set again before a WaitFlag cleared it, in the kernel's order: the second set is lost.
inline void hb_check_one_bit(int event, int32_t id, Src src) {
    for (const PendingFlag& f : state().hb.flags) {
        if (f.event != event || f.id != id) continue;
        fault("sync-double-set", "SetFlag", src,
              "SetFlag<HardEvent::" + flag_name(event, id) + " while the same flag, set at line " +
                  std::to_string(f.at.line) + ", has not been waited for: an event flag is one bit, so the second "
                  "set is lost and the second WaitFlag waits forever on the device; add WaitFlag<HardEvent::" +
                  flag_name(event, id) + " between the two sets, or give this one another event id");
    }
}

inline void hb_set_flag(int event, int32_t id, Src src) {
    const EventPipes& ev = kEvents[event];
    hb_check_held(ev.src, "SetFlag", src);  // queued behind an unmet wait of its own pipe
    hb_check_one_bit(event, id, src);
    Hb& h = state().hb;
    for (auto it = h.waits.begin(); it != h.waits.end(); ++it) {
        if (it->event == event && it->id == id) {  // the wait issued earlier: its pipe goes on from here
            hb_join(ev.dst, hb_capture(ev.src));
            h.waits.erase(it);
            return;
        }
    }
    h.flags.push_back(PendingFlag{static_cast<uint8_t>(event), static_cast<int8_t>(id), hb_capture(ev.src), src});
}

inline void hb_wait_flag(int event, int32_t id, Src src) {
    const int y = kEvents[event].dst;
    Hb& h = state().hb;
    for (auto it = h.flags.begin(); it != h.flags.end(); ++it) {
        if (it->event == event && it->id == id) {
            hb_join(y, it->clock);
            h.flags.erase(it);
            return;
        }
    }
    if (y == kPipeS) {
        fault("sync-order", "WaitFlag", src,
              "WaitFlag<HardEvent::" + flag_name(event, id) + " with no SetFlag of the same HardEvent and id before it: "
              "a wait on PIPE_S stalls the scalar unit, which issues every later instruction, the SetFlag too (the "
              "device would wait forever)");
    }
    h.waits.push_back(PendingWait{static_cast<uint8_t>(event), static_cast<int8_t>(id), src});
}

// At a block's end: every WaitFlag met by its SetFlag (else a hang), every SetFlag waited for
// (msSanitizer's synccheck: unpaired set_flag).
inline void hb_block_end() {
    const Hb& h = state().hb;
    if (!h.waits.empty()) {
        const PendingWait& w = h.waits.front();
        fault("sync-order", "WaitFlag", w.at,
              "WaitFlag<HardEvent::" + flag_name(w.event, w.id) + " with no SetFlag of the same HardEvent and id, "
              "before it or after it, by the kernel's end (the device would wait forever)");
    }
    const auto& flags = h.flags;
    if (flags.empty()) return;
    const PendingFlag& f = flags.front();
    const std::string ev = kEvents[f.event].name;
    fault("sync-unpaired", "SetFlag", f.at,
          "SetFlag<HardEvent::" + ev + ">(" + std::to_string(f.id) + ") is never waited for before the kernel ends: add "
          "WaitFlag<HardEvent::" + ev + ">(" + std::to_string(f.id) + ") where PIPE_" + kPipeNames[kEvents[f.event].dst] +
          " needs the data (or remove the SetFlag)" + (flags.size() > 1 ? " (" + std::to_string(flags.size() - 1) + " more)" : ""));
}

// --- global memory -------------------------------------------------------------------------------

// Records [b, e) as accessed by `who` in `m`, replacing what it overlaps; merges with a
// neighbour of the same block and pipe (the later instruction stands for both).
inline void range_assign(RangeMap& m, uintptr_t b, uintptr_t e, const GmAccess& who) {
    auto it = m.lower_bound(b);
    if (it != m.begin()) {
        auto prev = std::prev(it);
        if (prev->second.end > b) {
            const GmRange old = prev->second;
            prev->second.end = b;
            if (old.end > e) m.emplace(e, GmRange{old.end, old.who});
            if (prev->first == b) m.erase(prev);
        }
    }
    it = m.lower_bound(b);
    while (it != m.end() && it->first < e) {
        if (it->second.end > e) {
            const GmRange rest = it->second;
            m.erase(it);
            m.emplace(e, rest);
            break;
        }
        it = m.erase(it);
    }
    uintptr_t nb = b, ne = e;
    GmAccess w = who;
    auto next = m.find(e);
    if (next != m.end() && next->second.who.block == w.block && next->second.who.pipe == w.pipe) {
        ne = next->second.end;
        w.epoch = std::max(w.epoch, next->second.who.epoch);
        m.erase(next);
    }
    auto after = m.lower_bound(b);
    if (after != m.begin()) {
        auto prev = std::prev(after);
        if (prev->second.end == b && prev->second.who.block == w.block && prev->second.who.pipe == w.pipe) {
            nb = prev->first;
            w.epoch = std::max(w.epoch, prev->second.who.epoch);
            m.erase(prev);
        }
    }
    m.emplace(nb, GmRange{ne, w});
}

// Calls f(range) for every range of `m` overlapping [b, e).
template <class F>
inline void range_each(const RangeMap& m, uintptr_t b, uintptr_t e, F f) {
    auto it = m.upper_bound(b);
    if (it != m.begin()) --it;
    for (; it != m.end() && it->first < e; ++it)
        if (it->second.end > b) f(it->first, it->second);
}

inline std::string gm_where(const Region& r, uintptr_t b, uintptr_t e) {
    return "bytes " + std::to_string(b - r.begin) + ".." + std::to_string(e - r.begin - 1) + " of '" + r.name + "'";
}

inline Region& gm_region(const void* ptr, uint64_t bytes, bool write, const char* api, Src src) {
    const uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
    Region* r = find_region(p, bytes);
    if (!r) {
        fault("gm-bounds", api, src,
              std::string(write ? "writes " : "reads ") + std::to_string(bytes) + " bytes at " + describe_address(p) +
                  ": outside every global tensor the kernel was given");
    }
    return *r;
}

// Bounds only (the soft SyncAll's flags: each block its own 32 bytes on the device).
inline void check_gm_bounds(const void* ptr, uint64_t bytes, bool write, const char* api, Src src) {
    seen(src);
    if (bytes) gm_region(ptr, bytes, write, api, src);
}

inline void gm_mark_init(Region& r, uintptr_t b, uintptr_t e) {
    if (r.access != kWritableShared) return;
    const uint64_t blocks = (r.end - r.begin + 31) / 32;
    if (r.init.empty()) r.init.assign((blocks + 63) / 64, 0);
    for (uint64_t k = (b - r.begin) / 32; k < (e - r.begin + 31) / 32; ++k) r.init[k / 64] |= uint64_t(1) << (k % 64);
}

// The first workspace byte in [b, e) nothing wrote in this launch, or e.
inline uintptr_t gm_first_uninit(const Region& r, uintptr_t b, uintptr_t e) {
    if (r.access != kWritableShared) return e;
    for (uint64_t k = (b - r.begin) / 32; k < (e - r.begin + 31) / 32; ++k) {
        if (r.init.empty() || !((r.init[k / 64] >> (k % 64)) & 1)) return std::max<uintptr_t>(b, r.begin + k * 32);
    }
    return e;
}

// Checks a global-memory access of `bytes` at `ptr` by `pipe` (-1: MTE2 for a read, MTE3 for a
// write) and records it for the running block. Raw pointer accesses come here too, on PIPE_S
// (twin_raw_gm.h), a run of them at a time.
inline void check_gm(const void* ptr, uint64_t bytes, bool write, const char* api, Src src, int pipe = -1) {
    raw_flush_pending();
    seen(src);
    if (bytes == 0) return;
    State& s = state();
    Region& r = gm_region(ptr, bytes, write, api, src);
    if (pipe < 0) pipe = write ? kPipeMTE3 : kPipeMTE2;
    hb_check_held(pipe, api, src);
    const uintptr_t b = reinterpret_cast<uintptr_t>(ptr), e = b + bytes;
    const uint32_t me = static_cast<uint32_t>(s.block_idx);
    if (!write) {
        if (r.access == kReadOnly) return;  // inputs: nothing writes them
        range_each(r.written, b, e, [&](uintptr_t start, const GmRange& w) {
            if (w.who.block != me) {
                // blocks run concurrently on a device: reading another block's bytes needs a SyncAll between
                fault("block-race", api, src,
                      "block " + std::to_string(me) + " reads byte " + std::to_string(std::max(b, start) - r.begin) +
                          " of '" + r.name + "' that block " + std::to_string(w.who.block) + " wrote at line " +
                          std::to_string(w.who.line) +
                          " with no SyncAll between; blocks run concurrently on the device, so the value read is a race");
            }
            hb_conflict(w.who.pipe, w.who.epoch, w.who.line, true, pipe, false, api, src,
                        gm_where(r, std::max(b, start), std::min(e, w.end)));
        });
        range_each(r.dirty, b, e, [&](uintptr_t start, const GmRange& d) {
            if (d.who.block == me && pipe == kPipeS) return;  // the core's own cache holds them
            fault("stale-cache", api, src,
                  (pipe == kPipeS ? "block " + std::to_string(me) + " reads " : "PIPE_" + std::string(kPipeNames[pipe]) + " reads ") +
                      gm_where(r, std::max(b, start), std::min(e, d.end)) + " that block " + std::to_string(d.who.block) +
                      " wrote with a scalar store (GlobalTensor::SetValue, a raw pointer) at line " + std::to_string(d.who.line) +
                      ", still in that core's data cache: add DataCacheCleanAndInvalid<T, CacheLine::SINGLE_CACHE_LINE, "
                      "DcciDst::CACHELINE_OUT>(tensor) after line " + std::to_string(d.who.line) +
                      (d.who.block == me ? "" : " (and a SyncAll before this read)"));
        });
        const uintptr_t hole = gm_first_uninit(r, b, e);
        const uint32_t epoch = hb_issue(pipe);
        range_assign(r.reads[me << 3 | pipe], b, e, GmAccess{me, static_cast<uint8_t>(pipe), epoch, line_of(src)});
        if (hole < e) {
            const std::string what = "reads workspace " + gm_where(r, hole, e) +
                                     " that nothing wrote in this launch (the workspace is not cleared: it holds what "
                                     "an earlier kernel left); write them first, or read only what was written";
            if (s.block_num <= 1) fault("uninit-read", api, src, what);
            if (s.suspects.empty()) s.suspects.push_back(State::Suspect{hole, e, me, api, src, what});
        }
        return;
    }
    if (r.access == kReadOnly) fault("gm-readonly", api, src, "writes to the input tensor '" + r.name + "'");
    gm_mark_init(r, b, e);
    if (s.atomic_add) return;  // several blocks may add into the same bytes
    range_each(r.written, b, e, [&](uintptr_t start, const GmRange& w) {
        if (w.who.block != me) {
            fault("block-overlap", api, src,
                  "block " + std::to_string(me) + " writes byte " + std::to_string(std::max(b, start) - r.begin) +
                      " of '" + r.name + "' that block " + std::to_string(w.who.block) + " also wrote (line " +
                      std::to_string(w.who.line) + "); blocks run concurrently on the device, so the result would be a race");
        }
        if (w.who.pipe != pipe || !in_order(pipe)) {
            hb_conflict(w.who.pipe, w.who.epoch, w.who.line, true, pipe, true, api, src,
                        gm_where(r, std::max(b, start), std::min(e, w.end)));
        }
    });
    for (const auto& [key, ranges] : r.reads) {
        const uint32_t reader = key >> 3;
        range_each(ranges, b, e, [&](uintptr_t start, const GmRange& rd) {
            if (reader != me) {
                fault("block-race", api, src,
                      "block " + std::to_string(me) + " writes " + gm_where(r, std::max(b, start), std::min(e, rd.end)) +
                          " that block " + std::to_string(reader) + " read at line " + std::to_string(rd.who.line) +
                          " with no SyncAll between; blocks run concurrently on the device, so that read is a race "
                          "whichever block runs first");
            }
            if (rd.who.pipe != pipe) {
                hb_conflict(rd.who.pipe, rd.who.epoch, rd.who.line, false, pipe, true, api, src,
                            gm_where(r, std::max(b, start), std::min(e, rd.end)));
            }
        });
    }
    const uint32_t epoch = hb_issue(pipe);
    const GmAccess who{me, static_cast<uint8_t>(pipe), epoch, line_of(src)};
    range_assign(r.written, b, e, who);
    if (pipe == kPipeS) range_assign(r.dirty, b, e, who);
}

// DataCacheCleanAndInvalid: the running core's cached scalar writes in [b, e) reach global
// memory (every region's, for the whole data cache).
inline void gm_clean(uintptr_t b, uintptr_t e, bool whole_cache) {
    raw_flush_pending();
    State& s = state();
    const uint32_t me = static_cast<uint32_t>(s.block_idx);
    for (auto& r : s.regions) {
        for (auto it = r.dirty.begin(); it != r.dirty.end();) {
            const bool mine = it->second.who.block == me;
            const bool inside = whole_cache || (it->first < e && it->second.end > b);
            if (!mine || !inside) {
                ++it;
                continue;
            }
            if (whole_cache || (it->first >= b && it->second.end <= e)) {
                it = r.dirty.erase(it);
                continue;
            }
            const GmRange old = it->second;
            const uintptr_t start = it->first;
            it = r.dirty.erase(it);
            if (start < b) r.dirty.emplace(start, GmRange{b, old.who});
            if (old.end > e) r.dirty.emplace(e, GmRange{old.end, old.who});
            it = r.dirty.upper_bound(b);
        }
    }
}

// A completed SyncAll: every block's accesses before it are ordered. Returns a fault line for a
// workspace read of bytes no block wrote before the barrier, or "".
inline std::string barrier_completed() {
    State& s = state();
    for (auto& r : s.regions) {
        r.written.clear();
        r.reads.clear();
    }
    std::string text;
    if (!s.suspects.empty()) {
        const State::Suspect& u = s.suspects.front();
        const char* file = u.at.file ? std::strrchr(u.at.file, '/') : nullptr;
        text = "twin fault [uninit-read]: " + u.api + " at " + (file ? file + 1 : u.at.file ? u.at.file : "?") + ":" +
               std::to_string(u.at.line) + ": " + u.what + " (block " + std::to_string(u.block) + " of " +
               std::to_string(s.block_num) + ")";
    }
    s.suspects.clear();
    return text;
}

// A new launch: nothing accessed yet.
inline void launch_tracking_begin() {
    State& s = state();
    for (auto& r : s.regions) {
        r.written.clear();
        r.reads.clear();
        r.dirty.clear();
        r.init.clear();
    }
    s.suspects.clear();
}

}  // namespace evk_twin
