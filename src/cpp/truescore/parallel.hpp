// Fixed-partition parallel loops, and the loops every randomised kernel runs on.
//
// Work is split into contiguous blocks by task index, never by which thread is free, so
// a result depends only on the task index and never on the thread count. The one
// exception, for_each_stream_block_claimed, hands out whole stream blocks to whichever
// worker is free; a block's output still depends only on its index.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <mutex>
#include <new>
#include <system_error>
#include <thread>
#include <vector>

#include "truescore/cpu_budget.hpp"
#include "truescore/random.hpp"

namespace truescore {

// ---- The stream-block table ------------------------------------------------------------
//
// Items (resamples, sign patterns, replications) per Philox stream, one entry per family
// of kernels. Part of the reproducibility contract: changing an entry changes every
// randomised result of its kernels, so a new kernel gets a new entry rather than reusing
// one whose value might later move.
inline constexpr std::size_t kBootstrapBlock = 256;         // compare.cpp: bootstrap_means(_discrete), cluster_bootstrap_means
inline constexpr std::size_t kSignFlipBlock = 256;          // signflip.cpp: Monte Carlo sign patterns
inline constexpr std::size_t kFamilyBootstrapBlock = 64;    // cluster_bootstrap.cpp: cluster_bootstrap_difference
inline constexpr std::size_t kReplicateBlock = 1;           // resampling.cpp and the randomization test's Monte Carlo draws
// calibration.cpp: replications per task. Exported as _core.CALIBRATION_BLOCK, which the
// Python engine uses as REPLICATIONS_PER_TASK and passes back as TaskRange::block.
inline constexpr std::size_t kCalibrationBlock = 250;

// Minimum work a thread must get before a loop uses it (a thread costs ~20 us to start).
// These decide only how many threads run, never a result.
inline constexpr std::size_t kMinStepsPerThread = 200000;   // element steps (index draws, pattern bits)
inline constexpr std::size_t kMinReplicatesPerThread = 16;  // resampling.cpp replicates
inline constexpr std::size_t kMinDrawsPerThread = 64;       // randomization test Monte Carlo draws
inline constexpr std::size_t kMinTasksPerThread = 1;        // calibration tasks (each ~1 ms or more)
inline constexpr std::size_t kMinAuditsPerThread = 16;      // gap_intervals audits
inline constexpr std::size_t kMinShardsPerThread = 64;      // rank tests and row means

// Blocks per thread for at least kMinStepsPerThread element steps, at `steps_per_item`
// steps per item and `block` items per block.
inline std::size_t min_blocks_for_steps(std::size_t block, std::size_t steps_per_item) {
    return std::max<std::size_t>(1, kMinStepsPerThread / (block * std::max<std::size_t>(1, steps_per_item)));
}

// ---- Cancellation ----------------------------------------------------------------------
//
// A caller that may want to stop a long kernel (the bindings, on Ctrl-C) installs a
// CancelPoll on the thread that calls the kernel. That thread keeps computing: between its
// blocks (throw_if_cancelled, inside every stream-block loop and the long serial loops)
// and while it waits for its workers (parallel_for_blocks), it runs the poll about every
// `interval`; when the poll says stop, the shared flag is set and every thread leaves at
// its next block boundary with Cancelled. Workers see only the flag (parallel_for_blocks
// hands it on). Nothing else changes: with no CancelPoll the checks are a null test, and a
// finished kernel's result never depends on the flag.

// Thrown by throw_if_cancelled; the caller that installed the CancelPoll catches it.
struct Cancelled : std::exception {
    const char* what() const noexcept override { return "kernel cancelled"; }
};

inline const std::atomic<bool>*& cancel_flag() {
    thread_local const std::atomic<bool>* flag = nullptr;
    return flag;
}

class CancelPoll;
inline CancelPoll*& cancel_poll() {
    thread_local CancelPoll* poll = nullptr;
    return poll;
}

// Installs, for its lifetime, the flag and the poll of the current (calling) thread.
// poll() returns true to stop the kernel; it runs on this thread only, at most once per
// `interval` (clock read every kPollStride checks, so a check stays a few nanoseconds).
class CancelPoll {
public:
    CancelPoll(bool (*poll)(), std::chrono::milliseconds interval)
        : poll_(poll), interval_(interval), next_(std::chrono::steady_clock::now() + interval),
          previous_flag_(cancel_flag()), previous_poll_(cancel_poll()) {
        cancel_flag() = &flag_;
        cancel_poll() = this;
    }
    ~CancelPoll() {
        cancel_flag() = previous_flag_;
        cancel_poll() = previous_poll_;
    }
    CancelPoll(const CancelPoll&) = delete;
    CancelPoll& operator=(const CancelPoll&) = delete;

    bool cancelled() const { return flag_.load(std::memory_order_relaxed); }
    std::chrono::milliseconds interval() const { return interval_; }

    // Runs the poll if `interval` has passed (force: whenever called); true when stopped.
    bool check(bool force = false) {
        if (flag_.load(std::memory_order_relaxed)) return true;
        if (!force && (++calls_ % kPollStride) != 0) return false;
        const auto now = std::chrono::steady_clock::now();
        if (!force && now < next_) return false;
        next_ = now + interval_;
        if (poll_()) flag_.store(true, std::memory_order_relaxed);
        return flag_.load(std::memory_order_relaxed);
    }

private:
    static constexpr unsigned kPollStride = 8;
    bool (*poll_)();
    std::chrono::milliseconds interval_;
    std::chrono::steady_clock::time_point next_;
    unsigned calls_ = 0;
    std::atomic<bool> flag_{false};
    const std::atomic<bool>* previous_flag_;
    CancelPoll* previous_poll_;
};

// Workers of a parallel loop: the calling thread's flag, no poll.
class CancelScope {
public:
    explicit CancelScope(const std::atomic<bool>* flag) : previous_(cancel_flag()) { cancel_flag() = flag; }
    ~CancelScope() { cancel_flag() = previous_; }
    CancelScope(const CancelScope&) = delete;
    CancelScope& operator=(const CancelScope&) = delete;

private:
    const std::atomic<bool>* previous_;
};

inline void throw_if_cancelled() {
    if (CancelPoll* poll = cancel_poll()) {
        if (poll->check()) throw Cancelled();
        return;
    }
    const std::atomic<bool>* flag = cancel_flag();
    if (flag != nullptr && flag->load(std::memory_order_relaxed)) throw Cancelled();
}

// Element steps between two throw_if_cancelled calls in loops over many small items
// (shards, audits): a check per item would cost ~5% where items are ~100 steps.
inline constexpr std::size_t kStepsPerCancelCheck = 1 << 16;

// Counts a loop's steps and checks for a stop about every kStepsPerCancelCheck of them.
class CancelEvery {
public:
    void add(std::size_t steps) {
        steps_ += steps;
        if (steps_ >= kStepsPerCancelCheck) {
            steps_ = 0;
            throw_if_cancelled();
        }
    }

private:
    std::size_t steps_ = kStepsPerCancelCheck;  // the first item checks
};

// ---- Threads ---------------------------------------------------------------------------

// CPUs this process may use (cpu_budget.hpp: affinity and cgroup quota; at least 1). Read
// once, at the first parallel call: it reads /proc and /sys, which costs more than a
// small kernel call itself.
inline int core_count() {
    static const int cores = cpu_budget();
    return cores;
}

// Most threads a loop starts: kMaxThreadsPerCore per core. More threads than that only
// cost memory (a stack each) and start-up time; the cap never changes a result.
inline constexpr int kMaxThreadsPerCore = 4;

// Thread count to use: requested > 0 is taken as given up to kMaxThreadsPerCore x cores,
// 0 (or less) means every core.
inline int resolve_threads(int requested) {
    if (requested > 0) return std::min(requested, kMaxThreadsPerCore * core_count());
    return core_count();
}

// Calls body(begin, end) on contiguous blocks covering [0, n) with n_threads threads
// (0 or less: every core). Blocks below `min_per_thread` tasks are not worth a thread:
// small batches run inline. The partition depends only on n and the thread count asked
// for: when the system refuses a thread (std::system_error, or no memory for its stack),
// that worker's block and every later one run on the calling thread instead, so a
// starved process gets the same result, only later, and never terminates.
template <class Body>
void parallel_for_blocks(std::size_t n, int n_threads, std::size_t min_per_thread, Body body) {
    if (n == 0) return;
    std::size_t workers = static_cast<std::size_t>(resolve_threads(n_threads));
    workers = std::min(workers, std::max<std::size_t>(1, n / std::max<std::size_t>(1, min_per_thread)));
    if (workers <= 1) {
        body(std::size_t{0}, n);
        return;
    }
    std::vector<std::exception_ptr> errors(workers);
    std::vector<std::thread> threads;
    threads.reserve(workers - 1);
    const std::size_t chunk = n / workers, extra = n % workers;
    const std::atomic<bool>* flag = cancel_flag();
    std::mutex finish_mutex;
    std::condition_variable finished;
    std::size_t running = 0;  // started workers still running (guarded by finish_mutex)
    auto run = [&, flag](std::size_t w, std::size_t begin, std::size_t end) {
        try {
            CancelScope scope(flag);  // workers see the caller's flag
            body(begin, end);
        } catch (...) {
            errors[w] = std::current_exception();
        }
    };
    auto run_worker = [&](std::size_t w, std::size_t begin, std::size_t end) {
        run(w, begin, end);
        std::lock_guard<std::mutex> lock(finish_mutex);
        --running;
        finished.notify_one();
    };
    bool spawning = true;
    std::size_t begin = 0;
    for (std::size_t w = 0; w < workers; ++w) {
        const std::size_t end = begin + chunk + (w < extra ? 1 : 0);
        bool started = false;
        if (spawning && w + 1 < workers) {
            try {
                {
                    std::lock_guard<std::mutex> lock(finish_mutex);
                    ++running;
                }
                threads.emplace_back(run_worker, w, begin, end);
                started = true;
            } catch (const std::system_error&) {
                spawning = false;
            } catch (const std::bad_alloc&) {
                spawning = false;
            }
            if (!started) {  // counted above, never started
                std::lock_guard<std::mutex> lock(finish_mutex);
                --running;
            }
        }
        if (!started) run(w, begin, end);
        begin = end;
    }
    // The calling thread has done its own block; while the workers finish theirs it keeps
    // polling (a worker's block may take longer), at the poll's interval.
    if (CancelPoll* poll = cancel_poll(); poll != nullptr && !threads.empty()) {
        std::unique_lock<std::mutex> lock(finish_mutex);
        while (!finished.wait_for(lock, poll->interval(), [&] { return running == 0; })) {
            lock.unlock();
            poll->check(/*force=*/true);  // sets the flag on a stop; workers leave soon
            lock.lock();
        }
    }
    for (auto& t : threads) t.join();
    for (auto& e : errors)
        if (e) std::rethrow_exception(e);
}

// ---- The stream-block loop -------------------------------------------------------------

// The streams of a randomised loop over items [0, n_items): block k holds items
// [k * block, min(n_items, (k + 1) * block)) and draws from
// Philox::for_task(key0, key1, first_stream + k), item after item.
struct StreamBlocks {
    std::uint64_t key0;
    std::uint64_t key1;
    std::size_t n_items;
    std::size_t block;                // items per stream: an entry of the table above
    std::uint64_t first_stream = 0;   // stream of block 0
    std::size_t n_blocks() const { return (n_items + block - 1) / block; }
};

// Block k of `streams`: a stop check, then body(state, gen, k, item_begin, item_end) on
// block k's fresh stream (the step of both stream-block loops below).
template <class State, class Body>
inline void run_stream_block(const StreamBlocks& streams, std::size_t k, State& state, Body& body) {
    throw_if_cancelled();
    Philox gen = Philox::for_task(streams.key0, streams.key1, streams.first_stream + k);
    body(state, gen, k, k * streams.block, std::min(streams.n_items, (k + 1) * streams.block));
}

struct NoState {};
inline constexpr auto no_state = [] { return NoState{}; };
inline constexpr auto no_finish = [](auto&) {};

// Runs blocks [block_begin, block_end) of `streams` on n_threads threads, at least
// `min_blocks_per_thread` blocks a thread, split by block index (never by which thread is
// free). Each worker builds its state once with make_state() (samplers, scratch space,
// integer tallies), calls body(state, gen, k, item_begin, item_end) for each of its blocks
// k in order, gen being block k's fresh stream, then finish(state). A result that depends
// only on per-block (or per-item) outputs and order-free merges of the workers' states
// (integer counts) is therefore independent of the thread count; floating-point partial
// sums must be written per block and reduced by the caller in block order.
template <class MakeState, class Body, class Finish = decltype(no_finish)>
void for_each_stream_block(const StreamBlocks& streams, std::size_t block_begin, std::size_t block_end,
                           int n_threads, std::size_t min_blocks_per_thread, MakeState make_state,
                           Body body, Finish finish = no_finish) {
    if (block_end <= block_begin) return;
    parallel_for_blocks(block_end - block_begin, n_threads, min_blocks_per_thread,
                        [&](std::size_t first, std::size_t last) {
        auto state = make_state();
        for (std::size_t k = block_begin + first; k < block_begin + last; ++k)
            run_stream_block(streams, k, state, body);
        finish(state);
    });
}

// Every block of `streams`.
template <class MakeState, class Body, class Finish = decltype(no_finish)>
void for_each_stream_block(const StreamBlocks& streams, int n_threads, std::size_t min_blocks_per_thread,
                           MakeState make_state, Body body, Finish finish = no_finish) {
    for_each_stream_block(streams, 0, streams.n_blocks(), n_threads, min_blocks_per_thread, make_state, body,
                          finish);
}

// for_each_stream_block with the blocks claimed, `claim` at a time, by whichever worker is
// free (one atomic increment per claim) instead of split in fixed shares up front: a
// worker whose core another process shares (a loaded machine, a container given fewer
// cores than it reports) takes fewer blocks, where a fixed share would keep the whole
// call waiting for it. Block k still gets stream k and items [k block, (k + 1) block), so
// per-block (per-item) outputs are the same for every thread count and claiming order;
// which blocks a worker's state sees changes from run to run, so `finish` may only make
// order-free merges (integer counts). Blocks per claim and per thread decide only who
// computes what.
template <class MakeState, class Body, class Finish = decltype(no_finish)>
void for_each_stream_block_claimed(const StreamBlocks& streams, int n_threads, std::size_t min_blocks_per_thread,
                                   std::size_t claim, MakeState make_state, Body body, Finish finish = no_finish) {
    const std::size_t n = streams.n_blocks();
    if (n == 0) return;
    claim = std::max<std::size_t>(1, claim);
    std::atomic<std::size_t> next{0};
    // parallel_for_blocks decides the workers (and calls this once per worker, ignoring
    // the share it was given); a worker that gets no thread runs on the calling thread
    // after its own and finds little or nothing left to claim.
    parallel_for_blocks(n, n_threads, min_blocks_per_thread, [&](std::size_t, std::size_t) {
        auto state = make_state();
        for (;;) {
            const std::size_t begin = next.fetch_add(claim, std::memory_order_relaxed);
            if (begin >= n) break;
            for (std::size_t k = begin; k < std::min(n, begin + claim); ++k) run_stream_block(streams, k, state, body);
        }
        finish(state);
    });
}

}  // namespace truescore
