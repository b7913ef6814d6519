// Paired comparisons of two systems: the streaming bootstraps (the sign-flip permutation
// test is in signflip.hpp, the cluster bootstrap in cluster_bootstrap.hpp).
//
// Randomness: resamples are grouped in blocks of kBootstrapBlock (parallel.hpp); block k
// draws from Philox::for_task(key0, key1, k), resample after resample, so every number
// depends only on (key, block index) and never on the thread count. Memory is O(n + n_resamples):
// indices are drawn and consumed one at a time, never stored as a matrix.
#pragma once

#include <cstddef>
#include <cstdint>

namespace truescore {

// out[r] = mean of n values drawn uniformly with replacement from d[0..n), for r < n_boot;
// the indices come from PackedIndexSampler (sampling.hpp), four accumulators i mod 4.
void bootstrap_means(const double* d, std::size_t n, std::size_t n_boot, std::uint64_t key0,
                     std::uint64_t key1, double* out, int n_threads);

// Discrete data: the bootstrap of n values taking K distinct values values[k] with
// counts[k] (summing to n). A resample's counts are Multinomial(n, counts / n), drawn as
// K - 1 conditional binomials, so a resample costs O(K) instead of O(n); the resampled
// mean has exactly the distribution of the index bootstrap's.
void bootstrap_means_discrete(const double* values, const std::int64_t* counts, std::size_t k,
                              std::size_t n_boot, std::uint64_t key0, std::uint64_t key1,
                              double* out, int n_threads);

// Binomial(n, p) variates: inversion for n * min(p, 1 - p) < 10, otherwise Hormann's
// BTRD (transformed rejection with decomposition), exact up to floating point.
void binomial_sample(std::int64_t n, double p, std::size_t size, std::uint64_t key0,
                     std::uint64_t key1, std::int64_t* out);

}  // namespace truescore
