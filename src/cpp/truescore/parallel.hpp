// Fixed-partition parallel loops.
//
// Work is split into contiguous blocks by task index, never by which thread is free, so
// a result depends only on the task index and never on the thread count.
#pragma once

#include <algorithm>
#include <cstddef>
#include <exception>
#include <thread>
#include <vector>

namespace truescore {

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

}  // namespace truescore
