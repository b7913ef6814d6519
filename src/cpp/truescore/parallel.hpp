// Fixed-partition parallel loops, and the one loop every randomised kernel runs on.
//
// Work is split into contiguous blocks by task index, never by which thread is free, so
// a result depends only on the task index and never on the thread count.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <thread>
#include <vector>

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
// calibration.cpp: replications per task. The Python engine owns this one (calibration's
// REPLICATIONS_PER_TASK) and passes it as TaskRange::block; recorded here so the table is whole.
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

// ---- Threads ---------------------------------------------------------------------------

// Thread count to use: requested > 0 is taken as given, 0 (or less) means every core.
// The core count is read once: hardware_concurrency() reads /sys on glibc, which costs
// more than a small kernel call itself.
inline int resolve_threads(int requested) {
    if (requested > 0) return requested;
    static const int cores = [] {
        const unsigned hw = std::thread::hardware_concurrency();
        return hw == 0 ? 1 : static_cast<int>(hw);
    }();
    return cores;
}

// Calls body(begin, end) on contiguous blocks covering [0, n) with n_threads threads
// (0 or less: every core). Blocks below `min_per_thread` tasks are not worth a thread:
// small batches run inline.
template <class Body>
void parallel_for_blocks(std::size_t n, int n_threads, std::size_t min_per_thread, Body body) {
    if (n == 0) return;
    std::size_t workers = static_cast<std::size_t>(resolve_threads(n_threads));
    workers = std::min(workers, std::max<std::size_t>(1, n / std::max<std::size_t>(1, min_per_thread)));
    if (workers <= 1) {
        body(std::size_t{0}, n);
        return;
    }
    std::vector<std::thread> threads;
    std::vector<std::exception_ptr> errors(workers);
    threads.reserve(workers - 1);
    const std::size_t chunk = n / workers, extra = n % workers;
    std::size_t begin = 0;
    for (std::size_t w = 0; w < workers; ++w) {
        const std::size_t end = begin + chunk + (w < extra ? 1 : 0);
        auto run = [&, w, begin, end] {
            try {
                body(begin, end);
            } catch (...) {
                errors[w] = std::current_exception();
            }
        };
        if (w + 1 == workers) {
            run();
        } else {
            threads.emplace_back(run);
        }
        begin = end;
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
        for (std::size_t k = block_begin + first; k < block_begin + last; ++k) {
            Philox gen = Philox::for_task(streams.key0, streams.key1, streams.first_stream + k);
            body(state, gen, k, k * streams.block, std::min(streams.n_items, (k + 1) * streams.block));
        }
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

}  // namespace truescore
