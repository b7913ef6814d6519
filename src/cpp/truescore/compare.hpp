// Paired comparisons of two systems: the streaming bootstraps (the sign-flip permutation
// test is in signflip.hpp).
//
// Randomness: resamples are grouped in blocks of kResampleBlock; block k draws from
// Philox::for_task(key0, key1, k), resample after resample, so every number depends only
// on (key, block index) and never on the thread count. Memory is O(n + n_resamples):
// indices are drawn and consumed one at a time, never stored as a matrix.
#pragma once

#include <cstddef>
#include <cstdint>

namespace truescore {

// Resamples per random stream (part of the reproducibility contract: changing it changes
// every randomised result).
constexpr std::size_t kResampleBlock = 256;

// out[r] = mean of n values drawn uniformly with replacement from d[0..n), for r < n_boot.
void bootstrap_means(const double* d, std::size_t n, std::size_t n_boot, std::uint64_t key0,
                     std::uint64_t key1, double* out, int n_threads);

// Cluster bootstrap: draw n_clusters clusters with replacement;
// out[r] = sum of the drawn sums / sum of the drawn sizes.
void cluster_bootstrap_means(const double* sums, const std::int64_t* sizes,
                             std::size_t n_clusters, std::size_t n_boot, std::uint64_t key0,
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
