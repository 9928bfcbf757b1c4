// EvoKernel Ascend C twin: how a launch runs its blocks, so that SyncAll is a real barrier.
//
// Every block runs on its own thread, but only one thread runs at a time: a baton (`turn_`)
// names it, and the launcher passes it in block order. A block holds the baton until it ends
// or reaches SyncAll; there it hands the baton back and sleeps until every block has arrived,
// then the blocks resume in order. The interleaving is therefore deterministic, the twin's
// shared state needs no locks (a block's own part is swapped in while it holds the baton:
// evk_twin::swap_block), and a block really waits for the others at the barrier.
//
// Faults of the barrier (rule `sync-all`), where a device would hang: a block ends while
// others wait at a SyncAll it never reaches, or a launch with SyncAll has more blocks than
// vector cores (blocks beyond the cores only start when others end, so they never arrive).
#pragma once

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>
#include <algorithm>

#include "twin_core.h"

namespace evk_twin {

class BlockRunner {
public:
    enum Status : int { kReady = 0, kAtBarrier, kDone, kFaulted };

    template <class Fn>
    BlockRunner(uint32_t blocks, Fn&& body) : saved_(blocks), status_(blocks, kReady), body_(body) {}

    // Runs every block to its end; returns 0, 1 after a fault (in `fault`), 2 after another exception.
    uint32_t run(std::string& fault) {
        State& s = state();
        const uint32_t n = static_cast<uint32_t>(status_.size());
        current() = this;
        s.sync_all = &BlockRunner::sync_all_hook;
        std::vector<std::thread> threads(n);
        uint32_t rc = 0;
        for (uint32_t b = 0; b < n && rc == 0; ++b) {
            saved_[b].reset(new BlockSaved());  // only live blocks hold one (UB, flags, counters)
            saved_[b]->block_idx = b;
            try {
                threads[b] = std::thread([this, b] { block_main(b); });
            } catch (const std::system_error& e) {  // out of threads or memory for a stack
                fault = std::string("twin fault [exception]: Launch at launcher.cpp:0: no thread for block ") +
                        std::to_string(b) + ": " + e.what();
                rc = 2;
                break;
            }
            rc = resume(b, fault);
            join_if_ended(threads, b);
        }
        // every block that started has ended or waits at a barrier: complete barriers while all wait
        while (rc == 0) {
            uint32_t waiting = 0, done = 0;
            for (int st : status_) waiting += st == kAtBarrier, done += st == kDone;
            if (waiting == 0) break;
            if (done > 0) {
                uint32_t ended = 0, waiter = 0;
                while (status_[ended] != kDone) ++ended;
                while (status_[waiter] != kAtBarrier) ++waiter;
                const Src at = barrier_at_[waiter];
                const char* slash = at.file ? std::strrchr(at.file, '/') : nullptr;
                fault = std::string("twin fault [sync-all]: SyncAll at ") + (slash ? slash + 1 : at.file ? at.file : "?") +
                        ":" + std::to_string(at.line) + ": block " + std::to_string(waiter) + " waits at SyncAll, but block " + std::to_string(ended) +
                        " ended without reaching it (every block must call SyncAll the same number of times; the "
                        "device would wait forever)";
                rc = 1;
                break;
            }
            // accesses before the barrier are ordered; a workspace read nothing wrote before it is uninit-read
            const std::string unwritten = barrier_completed();
            if (!unwritten.empty()) {
                fault = unwritten;
                rc = 1;
                break;
            }
            for (uint32_t b = 0; b < n && rc == 0; ++b) {
                if (status_[b] != kAtBarrier) continue;
                rc = resume(b, fault);
                join_if_ended(threads, b);
            }
        }
        if (rc == 0) {  // the launch's last interval
            const std::string unwritten = barrier_completed();
            if (!unwritten.empty()) fault = unwritten, rc = 1;
        }
        abort_waiters(threads);
        std::sort(finished_.begin(), finished_.end(),  // the profile deals blocks to cores in block order
                  [](const auto& x, const auto& y) { return x.first < y.first; });
        for (const auto& block : finished_) s.per_block.push_back(block.second);
        s.sync_all = nullptr;
        current() = nullptr;
        return rc;
    }

private:
    struct Abort {};  // unwinds a block left waiting at a barrier after another block faulted

    static BlockRunner*& current() {
        static BlockRunner* runner = nullptr;
        return runner;
    }

    // Gives block b the baton (its own state swapped in) until it ends or reaches SyncAll.
    uint32_t resume(uint32_t b, std::string& fault) {
        State& s = state();
        status_[b] = kReady;
        swap_block(s, *saved_[b]);
        {
            std::unique_lock<std::mutex> lock(mu_);
            turn_ = static_cast<int64_t>(b);
            cv_.notify_all();
            cv_.wait(lock, [&] { return turn_ == kLauncher; });
        }
        swap_block(s, *saved_[b]);
        if (status_[b] == kDone || status_[b] == kFaulted) {
            finished_.emplace_back(b, saved_[b]->counters);
            saved_[b].reset();
        }
        if (status_[b] == kFaulted) {
            fault = fault_;
            return exception_ ? 2 : 1;
        }
        return 0;
    }

    void block_main(uint32_t b) {
        wait_turn(b);
        State& s = state();
        int status = kDone;
        if (!aborted_) {
            try {
                fresh_ub();
                body_();
                hb_block_end();  // every SetFlag waited for
            } catch (const Fault& f) {
                fault_ = f.line + " (block " + std::to_string(b) + " of " + std::to_string(status_.size()) + ")";
                status = kFaulted;
            } catch (const Abort&) {
                status = kDone;
            } catch (const std::exception& e) {
                fault_ = std::string("twin fault [exception]: kernel at kernel.cpp:0: a C++ exception escaped the "
                                     "kernel: ") + e.what() + " (block " + std::to_string(b) + ")";
                exception_ = true;
                status = kFaulted;
            }
        }
        (void)s;
        status_[b] = status;
        give_back();
    }

    // SyncAll inside block `me`: hand the baton back and sleep until the barrier completes.
    static void sync_all_hook(Src src) {
        BlockRunner* self = current();
        State& s = state();
        const uint32_t me = static_cast<uint32_t>(s.block_idx);
        if (s.block_num > vector_cores()) {
            fault("sync-all", "SyncAll", src,
                  "a launch of " + std::to_string(s.block_num) + " blocks on " + std::to_string(vector_cores()) +
                      " vector cores: blocks beyond the cores start only when others end, so SyncAll would wait "
                      "forever (launch at most the core count)");
        }
        self->barrier_at_[me] = src;
        self->status_[me] = kAtBarrier;
        self->give_back();
        self->wait_turn(me);
        if (self->aborted_) throw Abort{};
    }

    void give_back() {
        std::lock_guard<std::mutex> lock(mu_);
        turn_ = kLauncher;
        cv_.notify_all();
    }

    void wait_turn(uint32_t me) {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return turn_ == static_cast<int64_t>(me); });
    }

    // A block's thread is joined as soon as it ends: a launch of thousands of blocks keeps at
    // most the blocks waiting at a barrier alive (their stacks count against the memory limit).
    void join_if_ended(std::vector<std::thread>& threads, uint32_t b) {
        if (status_[b] != kAtBarrier && threads[b].joinable()) threads[b].join();
    }

    // Wakes blocks still waiting at a barrier (after a fault) so they unwind, then joins all.
    void abort_waiters(std::vector<std::thread>& threads) {
        aborted_ = true;
        for (uint32_t b = 0; b < threads.size(); ++b) {
            if (status_[b] != kAtBarrier) continue;
            std::unique_lock<std::mutex> lock(mu_);
            turn_ = static_cast<int64_t>(b);
            cv_.notify_all();
            cv_.wait(lock, [&] { return turn_ == kLauncher; });
        }
        for (auto& t : threads)
            if (t.joinable()) t.join();
    }

    static constexpr int64_t kLauncher = -1;
    std::mutex mu_;
    std::condition_variable cv_;
    int64_t turn_ = kLauncher;
    bool aborted_ = false, exception_ = false;
    std::string fault_;
    std::vector<std::unique_ptr<BlockSaved>> saved_;
    std::vector<int> status_;
    std::vector<std::pair<uint32_t, BlockCounters>> finished_;
    std::map<uint32_t, Src> barrier_at_;
    std::function<void()> body_;
};

}  // namespace evk_twin
