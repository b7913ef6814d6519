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
#include <deque>
#include <exception>
#include <mutex>
#include <new>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#if defined(__unix__) || defined(__APPLE__)
#include <pthread.h>
#endif

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
inline constexpr std::size_t kConStatBlock = 1;             // constat.cpp: one resample (its fits dominate)
// calibration.cpp: replications per task. Exported as _core.CALIBRATION_BLOCK, which the
// Python engine uses as REPLICATIONS_PER_TASK and passes back as TaskRange::block.
inline constexpr std::size_t kCalibrationBlock = 250;

// Minimum work a thread must get before a loop uses it (handing a block to a sleeping pool
// worker costs ~10-50 us of wake-up on a shared machine).
// These decide only how many threads run, never a result.
inline constexpr std::size_t kMinStepsPerThread = 200000;   // element steps (index draws, pattern bits)
inline constexpr std::size_t kMinReplicatesPerThread = 16;  // resampling.cpp replicates
inline constexpr std::size_t kMinDrawsPerThread = 64;       // randomization test Monte Carlo draws
inline constexpr std::size_t kMinTasksPerThread = 1;        // calibration tasks (each ~1 ms or more)
inline constexpr std::size_t kMinAuditsPerThread = 16;      // gap_intervals audits
inline constexpr std::size_t kMinShardsPerThread = 64;      // rank tests and row means
inline constexpr std::size_t kShardsPerClaim = 64;          // rank tests: shards a worker claims at a time

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

// ---- The pool ---------------------------------------------------------------------------
//
// Every parallel loop runs on one process-wide pool of worker threads, started on first
// use and kept: a loop hands its blocks to the pool instead of starting threads (~20 us
// each) on every call. Idle workers sleep on a condition variable (no spinning: the
// studies share their cores with other processes). The pool only decides which thread
// runs a block, never how the work is split, so results stay those of the fixed
// partition below.
//
// - The calling thread runs the loop's last block itself, then takes back every block no
//   worker has started yet and runs those too, in block order: a pool short of workers
//   (the system refused a thread, or other loops keep them busy) costs time, never a
//   result, and a loop never waits on a queued block.
// - A loop started inside a pool worker (a kernel calling a threaded kernel) runs its
//   blocks inline on that worker, so workers never wait for each other.
// - Loops from several calling threads (the GIL is released while kernels run) share the
//   queue; each waits only for its own blocks.
// - fork(): the child has only the forking thread, so a child handler (pthread_atfork)
//   drops the parent's pool (leaked on purpose: its threads do not exist in the child,
//   and destroying their std::thread objects would terminate) and the child's first
//   parallel loop starts a fresh one. ProcessPoolExecutor's and Dask's forked workers
//   therefore get their own pool. The pool is never destroyed: at exit its idle workers
//   are asleep and end with the process.

namespace detail {

// One parallel loop's blocks on the pool: block w runs as run(context, w).
struct PoolJob {
    void (*run)(void* context, std::size_t w);
    void* context;
    std::size_t pending;  // blocks queued or running (guarded by the pool's mutex)
    std::condition_variable done;
};

class ThreadPool {
public:
    // Queues blocks [0, blocks) of job and wakes workers for them, starting threads up to
    // `blocks` workers (at most kMaxThreadsPerCore x cores - 1, as resolve_threads caps a
    // loop; none if the system refuses, and the caller then runs the blocks).
    // Returns false, with nothing of job queued, when there is no memory for the queue:
    // the caller then runs every block itself.
    bool submit(PoolJob& job, std::size_t blocks) {
        std::lock_guard<std::mutex> lock(mutex_);
        grow(blocks);
        job.pending = blocks;
        std::size_t queued = 0;
        try {
            for (; queued < blocks; ++queued) queue_.push_back(Task{&job, queued});
        } catch (const std::bad_alloc&) {
            queue_.erase(queue_.end() - static_cast<std::ptrdiff_t>(queued), queue_.end());
            job.pending = 0;
            return false;
        }
        if (blocks == 1)
            wake_.notify_one();
        else
            wake_.notify_all();
        return true;
    }

    // Removes the blocks of job no worker has taken and writes them, in block order, to
    // mine (room for every block submitted; allocated before, so nothing here can throw
    // and leave the job queued); returns how many (the caller runs them).
    std::size_t take_back(PoolJob& job, std::size_t* mine) {
        std::size_t taken = 0;
        std::lock_guard<std::mutex> lock(mutex_);
        for (auto it = queue_.begin(); it != queue_.end();) {
            if (it->job == &job) {
                mine[taken++] = it->w;
                it = queue_.erase(it);
            } else {
                ++it;
            }
        }
        job.pending -= taken;
        return taken;
    }

    // Waits until every block of job a worker took has finished; while it waits, the
    // calling thread's CancelPoll (if any) keeps polling at its interval.
    void wait(PoolJob& job) {
        std::unique_lock<std::mutex> lock(mutex_);
        CancelPoll* poll = cancel_poll();
        while (job.pending > 0) {
            if (poll == nullptr) {
                job.done.wait(lock);
            } else if (!job.done.wait_for(lock, poll->interval(), [&] { return job.pending == 0; })) {
                lock.unlock();
                poll->check(/*force=*/true);  // sets the flag on a stop; workers leave soon
                lock.lock();
            }
        }
    }

    // Waits for the blocks of job workers took, without polling: for a caller leaving
    // its frame early (an exception or a forced unwind out of its poll), whose job and
    // context workers still hold by reference.
    void wait_quietly(PoolJob& job) {
        std::unique_lock<std::mutex> lock(mutex_);
        job.done.wait(lock, [&] { return job.pending == 0; });
    }

    std::size_t workers() {
        std::lock_guard<std::mutex> lock(mutex_);
        return threads_.size();
    }

    static ThreadPool& instance() {
        ThreadPool* pool = slot().load(std::memory_order_acquire);
        if (pool != nullptr) return *pool;
        register_fork_handler();
        auto* fresh = new ThreadPool();
        if (!slot().compare_exchange_strong(pool, fresh, std::memory_order_acq_rel)) {
            delete fresh;  // another thread installed one first (fresh has no threads yet)
            return *pool;
        }
        return *fresh;
    }

    // Whether this thread is one of the pool's workers.
    static bool& on_worker() {
        thread_local bool worker = false;
        return worker;
    }

private:
    struct Task {
        PoolJob* job;
        std::size_t w;
    };

    ThreadPool() = default;

    static std::atomic<ThreadPool*>& slot() {
        static std::atomic<ThreadPool*> pool{nullptr};
        return pool;
    }

    static void register_fork_handler() {
#if defined(__unix__) || defined(__APPLE__)
        static const bool registered = [] {
            // In the child: forget the parent's pool (see above); a fresh one starts on use.
            pthread_atfork(nullptr, nullptr, [] { slot().store(nullptr, std::memory_order_relaxed); });
            return true;
        }();
        (void)registered;
#endif
    }

    // Starts workers up to `wanted` (mutex_ held); stops at the first thread refused (the
    // next loop tries again).
    void grow(std::size_t wanted) {
        while (threads_.size() < wanted) {
            try {
                threads_.emplace_back([this] { work(); });
            } catch (const std::system_error&) {
                return;
            } catch (const std::bad_alloc&) {
                return;
            }
        }
    }

    void work() {
        on_worker() = true;
        std::unique_lock<std::mutex> lock(mutex_);
        for (;;) {
            wake_.wait(lock, [&] { return !queue_.empty(); });
            const Task task = queue_.front();
            queue_.pop_front();
            lock.unlock();
            task.job->run(task.job->context, task.w);  // never throws (run catches)
            lock.lock();
            // The job may end (and its caller return) as soon as pending reaches zero and
            // the lock is released: nothing of it is touched after this.
            if (--task.job->pending == 0) task.job->done.notify_all();
        }
    }

    std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<Task> queue_;
    std::vector<std::thread> threads_;
};

}  // namespace detail

// Calls body(begin, end) on contiguous blocks covering [0, n) with n_threads threads
// (0 or less: every core): block w of `workers` holds n / workers tasks, plus one for the
// first n % workers blocks. Blocks below `min_per_thread` tasks are not worth a thread:
// small batches run inline. The partition depends only on n and the thread count asked
// for; which thread runs a block (a pool worker or the calling thread, see above) never
// changes a result.
template <class Body>
void parallel_for_blocks(std::size_t n, int n_threads, std::size_t min_per_thread, Body body) {
    if (n == 0) return;
    std::size_t workers = static_cast<std::size_t>(resolve_threads(n_threads));
    workers = std::min(workers, std::max<std::size_t>(1, n / std::max<std::size_t>(1, min_per_thread)));
    if (workers <= 1) {
        body(std::size_t{0}, n);
        return;
    }
    struct Context {
        Body& body;
        std::size_t chunk, extra;  // block w: chunk tasks, plus one for w < extra
        const std::atomic<bool>* flag;
        std::vector<std::exception_ptr> errors;
        void block(std::size_t w) {
            const std::size_t begin = w * chunk + std::min(w, extra);
            body(begin, begin + chunk + (w < extra ? 1 : 0));
        }
    } context{body, n / workers, n % workers, cancel_flag(), {}};
    if (detail::ThreadPool::on_worker()) {  // nested in a pool worker: every block here
        for (std::size_t w = 0; w < workers; ++w) context.block(w);
        return;
    }
    context.errors.resize(workers);
    auto run = [](void* c, std::size_t w) {
        auto& ctx = *static_cast<Context*>(c);
        try {
            CancelScope scope(ctx.flag);  // every block sees the caller's flag
            ctx.block(w);
        } catch (...) {
            ctx.errors[w] = std::current_exception();
        }
    };
    detail::ThreadPool& pool = detail::ThreadPool::instance();
    detail::PoolJob job{run, &context, 0, {}};
    std::vector<std::size_t> mine(workers);
    const bool queued = pool.submit(job, workers - 1);  // blocks 0 .. workers - 2
    // Should this frame be left before the job is done (an exception, or a forced unwind
    // out of the poll in wait()), unstarted blocks are withdrawn and running ones waited
    // for: workers hold job and context, which live here.
    struct Settle {
        detail::ThreadPool& pool;
        detail::PoolJob& job;
        std::size_t* mine;
        bool armed;
        ~Settle() {
            if (!armed) return;
            pool.take_back(job, mine);
            pool.wait_quietly(job);
        }
    } settle{pool, job, mine.data(), queued};
    run(&context, workers - 1);  // the caller runs the last
    if (queued) {
        const std::size_t taken = pool.take_back(job, mine.data());
        for (std::size_t k = 0; k < taken; ++k) run(&context, mine[k]);
        pool.wait(job);
        settle.armed = false;
    } else {  // nothing was queued (no memory): every block here, in order
        for (std::size_t w = 0; w + 1 < workers; ++w) run(&context, w);
    }
    for (auto& e : context.errors)
        if (e) std::rethrow_exception(e);
}

// Worker threads the pool holds now (0 before the first parallel loop of this process).
inline std::size_t pool_workers() { return detail::ThreadPool::instance().workers(); }

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
