// Paired comparisons of two systems: streaming bootstrap and sign-flip permutation test.
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

// Largest n for which exact sign-flip enumeration is attempted (2^n patterns, each an
// O(n) evaluation: 2^30 is already minutes of work).
constexpr std::size_t kMaxExactPairs = 30;

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

struct SignFlipCounts {
    std::int64_t at_most = 0;   // #{resamples with statistic <= observed + tolerance}
    std::int64_t at_least = 0;  // #{resamples with statistic >= observed - tolerance}
    std::int64_t total = 0;     // resamples counted (2^n when exact)
    double observed = 0.0;      // the observed statistic
};

// Exact enumeration of all 2^n sign patterns (n <= kMaxExactPairs). The statistic of a
// pattern is mean(x) - mean(y), x_i and y_i being a_i, b_i or swapped, each mean summed in
// NumPy's pairwise order; statistics within 100 machine epsilons (relative) of the observed
// one count as ties, exactly as scipy.stats.permutation_test does.
SignFlipCounts sign_flip_exact(const double* a, const double* b, std::size_t n, int n_threads);

// Monte Carlo: n_resamples random sign patterns of the differences d; the statistic is
// sum_i s_i d_i (a fixed multiple of the difference in means), with the same relative
// tie tolerance.
SignFlipCounts sign_flip_monte_carlo(const double* d, std::size_t n, std::size_t n_resamples,
                                     std::uint64_t key0, std::uint64_t key1, int n_threads);

// Monte Carlo sign flips for data with few distinct |differences|: magnitudes[k] > 0 occurs
// counts[k] times, net[k] = (#positive - #negative) among them. A resample's statistic is
// sum_k magnitudes[k] * (2 * #flips_k - counts[k]) with #flips_k the popcount of counts[k]
// random bits (exactly the sum of counts[k] random signs); the observed statistic is
// sum_k magnitudes[k] * net[k].
SignFlipCounts sign_flip_monte_carlo_grouped(const double* magnitudes, const std::int64_t* counts,
                                             const std::int64_t* net, std::size_t k,
                                             std::size_t n_resamples, std::uint64_t key0,
                                             std::uint64_t key1, int n_threads);

}  // namespace truescore
