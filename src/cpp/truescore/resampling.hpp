// Resampling kernels: the cross-model pattern permutation null, the finite-population
// bootstraps (Rao-Wu rescaling and Booth-Butler-Hall pseudo-population), the
// difference-in-differences bootstrap over parents (seed-paired contrasts use signflip.hpp).
//
// Every randomised kernel draws replicate (or permutation) b from its own Philox stream,
// Philox::for_task(key0, key1, b), so a result never depends on the thread count, and a
// NumPy reference reading numpy.random.Philox(key=[key0, key1], counter=[0, 0, b, 0])
// in the documented order reproduces every replicate bit for bit. Uniform integers on
// [0, n) are Philox::below(n) (Lemire's multiply-and-reject on one raw 64-bit word),
// except Rao-Wu's, which are PackedIndexSampler's (several a word). Means are
// numpy_sum(gathered values) / count, i.e. NumPy's pairwise order on a contiguous
// gather, except Rao-Wu's (gathered_sum, sampling.hpp). Memory per thread is O(n); no
// kernel ever holds B x n numbers.
//
// None of these validate their inputs beyond what they need to avoid undefined
// behaviour: the bindings check shapes and ranges (with the GIL held) first.
#pragma once

#include <cstddef>
#include <cstdint>

namespace truescore {

// ---------------------------------------------------------------------------------------
// Pattern permutation test
// ---------------------------------------------------------------------------------------

// Number of parents (columns of the row-major M x N 0/1 matrix `indicator`) on which at
// least `min_models` rows are 1.
std::int64_t pattern_statistic(const std::uint8_t* indicator, std::size_t n_models,
                               std::size_t n_parents, std::size_t min_models);

// Null histogram of the statistic when each model's row is permuted independently:
// hist[t] (t = 0..N) counts the draws with statistic t. Draw b uses task stream b; model
// m's permuted row is a uniformly random subset of size c_m (its number of ones) or, when
// c_m > N - c_m, the complement of a random subset of size N - c_m. Subsets are drawn by
// partial Fisher-Yates on the identity: for i = 0..s-1, j = i + below(N - i), swap
// positions i and j; the subset is the first s positions. Models are taken in row order.
void pattern_null_histogram(const std::uint8_t* indicator, std::size_t n_models,
                            std::size_t n_parents, std::size_t min_models, std::size_t draws,
                            std::uint64_t key0, std::uint64_t key1, int n_threads,
                            std::int64_t* hist);

// Bytes pattern_null_histogram's workers allocate (their samplers, scratch and
// histograms: about 24 per parent per worker), for a size check before it runs.
std::size_t pattern_test_bytes(std::size_t n_parents, std::size_t draws, int n_threads);

// ---------------------------------------------------------------------------------------
// Finite-population bootstraps of a (stratified) mean
// ---------------------------------------------------------------------------------------
//
// Values y are grouped by stratum: stratum h holds y[offsets[h] .. offsets[h + 1]),
// n_h >= 1 units. The estimate is sum_h weight[h] * ybar_h (weight[h] = N_h / N).

// Rao-Wu rescaling bootstrap. Replicate b: for each stratum in order draw m_h indices
// from a fresh PackedIndexSampler(gen, n_h) (sampling.hpp: several draws per 64-bit word;
// the chunks left in the word that completes a stratum are dropped), ybar'_h =
// gathered_sum (four accumulators, draw i to i mod 4) / m_h; the replicate is
// sum_h weight[h] * (ybar_h + lambda[h] * (ybar'_h - ybar_h)) (a sequential sum over h).
// With lambda_h = sqrt(m_h (1 - f_h) / (n_h - 1)) the bootstrap variance of the
// replicate has expectation sum_h weight_h^2 (1 - f_h) s_h^2 / n_h exactly.
void rao_wu_replicates(const double* y, const std::int64_t* offsets, std::size_t n_strata,
                       const std::int64_t* resample_size, const double* lambda,
                       const double* weight, std::size_t replicates, std::uint64_t key0,
                       std::uint64_t key1, int n_threads, double* out);

// The same replicates [first, first + count) as unit weights (the same draws): out is
// count x n (row-major,
// units in y's stratum-grouped order), w_hi = weight[h] / n_h * (1 - lambda_h +
// lambda_h * (n_h / m_h) * r_hi) with r_hi unit i's draw count; sum_i w_i y_i equals the
// replicate of rao_wu_replicates up to rounding, and the weights of a replicate sum to
// sum_h weight[h].
void rao_wu_weights(const std::int64_t* offsets, std::size_t n_strata,
                    const std::int64_t* resample_size, const double* lambda,
                    const double* weight, std::size_t first, std::size_t count,
                    std::uint64_t key0, std::uint64_t key1, double* out);

// Booth-Butler-Hall pseudo-population bootstrap, recentred. Stratum h with N_h = k n_h
// + r (0 <= r < n_h): the pseudo-population is k copies of every sampled unit (pseudo
// position p < k n_h is unit p mod n_h) plus r units drawn without replacement (position
// k n_h + j is the j-th of them). Replicate b, stratum by stratum: the r completion
// units by Floyd's algorithm (below), then n_h pseudo-positions out of N_h by Floyd's
// algorithm; ybar*_h = numpy_sum(gathered) / n_h; the pseudo-population mean is
// (k * numpy_sum(y_h) + numpy_sum(completion values)) / N_h; the replicate is
// sum_h weight[h] * (ybar_h + (ybar*_h - pseudo mean_h)).
// Floyd's algorithm for s of M: for j = M - s .. M - 1, t = below(j + 1); append j if t
// was already chosen, else append t (the chosen values in append order).
void bbh_replicates(const double* y, const std::int64_t* offsets, std::size_t n_strata,
                    const std::int64_t* population_size, const double* weight,
                    std::size_t replicates, std::uint64_t key0, std::uint64_t key1,
                    int n_threads, double* out);

// ---------------------------------------------------------------------------------------
// Difference in differences over parents
// ---------------------------------------------------------------------------------------
//
// Per parent, the before-to-after change in public correctness (dp) and in fresh
// correctness (df). Model m's exposed parents are [e_off[m], e_off[m+1]) of dp_e/df_e,
// its unexposed parents [u_off[m], u_off[m+1]) of dp_u/df_u.
// Replicate b writes out[(b * (M + 1) + m) * 3 + q], q = 0 public DiD, 1 fresh DiD,
// 2 visible gap (public DiD - fresh DiD); row m = M is the mean over models (a
// sequential sum / M). Draws: independent parents -> for each model in order, n_e
// indices below(n_e), then n_u indices below(n_u); shared parents (every model scored
// the same parents, equal counts) -> n_e exposed then n_u unexposed indices once,
// applied to every model. A mean is numpy_sum(gathered) / count.
void did_replicates(const double* dp_e, const double* df_e, const std::int64_t* e_off,
                    const double* dp_u, const double* df_u, const std::int64_t* u_off,
                    std::size_t n_models, bool shared_parents, std::size_t replicates,
                    std::uint64_t key0, std::uint64_t key1, int n_threads, double* out);

}  // namespace truescore
