// The exact exchangeability (permutation-rank) test, batched over shards.
//
// For a shard with canonical log-likelihood c and m shuffled-order log-likelihoods
// l_1..l_m: count = #{j : l_j >= c}, p = (1 + count) / (m + 1), the mean and the
// ddof=1 standard deviation of the l_j, and z = (c - mean) / sd (0 when sd is 0).
#pragma once

#include <cstddef>
#include <cstdint>

namespace truescore {

// Per-shard outputs, each an array of length n_shards owned by the caller.
struct RankOutputs {
    std::int64_t* count;
    double* p_value;
    double* mean;
    double* sd;
    double* z_score;
};

// One shard. Returns false if a permuted value is not finite (outputs then unspecified).
bool rank_test(double canonical, const double* permuted, std::size_t m, std::int64_t* count,
                   double* p_value, double* mean, double* sd, double* z_score);

// Dense batch: row i of an (n_shards, m) array, m >= 1, is permuted[i * row_stride ..
// i * row_stride + m) (row_stride = m for a C-contiguous array; 0 when every row is one
// and the same, as np.broadcast_to gives). Returns the index of the first shard holding a
// non-finite value, or -1.
std::int64_t rank_tests_dense(const double* canonical, const double* permuted,
                              std::size_t n_shards, std::size_t m, std::size_t row_stride,
                              RankOutputs out, int n_threads);

// Ragged batch: shard i's permutations are values[offsets[i] .. offsets[i+1]).
// offsets must be non-decreasing with offsets[i+1] > offsets[i] (checked by the caller).
std::int64_t rank_tests_ragged(const double* canonical, const double* values,
                               const std::int64_t* offsets, std::size_t n_shards,
                               RankOutputs out, int n_threads);

// The kernel the rank tests run now: "avx512", "avx", "sse2" or "plain" (every one gives
// the same bits; AVX-512 where the CPU has it, chosen at run time; for tests).
const char* rank_tests_vector_path();

// Mean of each row (n_rows, row_length), in NumPy's summation order: the SLCT's
// shuffled means. Returns the first row holding a non-finite value, or -1.
std::int64_t row_means_ragged(const double* values, const std::int64_t* offsets,
                              std::size_t n_rows, double* means, int n_threads);

// Natural log of the chi-squared(2k) survival function at x >= 0, the Fisher combined
// p-value, in closed form: P(Poisson(x/2) < k), summed in log space so it never
// underflows (a p-value of 1e-5000 is reported as its log).
double fisher_log_sf(double statistic, std::int64_t k);

}  // namespace truescore

