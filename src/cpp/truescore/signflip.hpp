// Sign-flip (paired randomization) tests: the one module that enumerates or samples sign
// patterns and counts those at least as extreme as the data. Used by compare's
// paired_permutation, pacost's paired_confidence_test and signflip.py's seed_contrast.
//
// Under the null that each paired difference d_i is symmetric about 0, flipping the sign
// of any subset S of the differences leaves their joint law unchanged. With
// T(s) = sum_i s_i d_i and f_S = sum_{i in S} d_i the pattern's flipped sum,
// T(s) = T(identity) - 2 f_S, so
//
//     T(s) >= T(identity)  <=>  f_S <= 0,     T(s) <= T(identity)  <=>  f_S >= 0.
//
// Patterns. Pattern p flips d_i when bit i of its bit string is set. Exact: p runs over
// all 2^n patterns and its bit string is p itself. Monte Carlo: patterns are grouped in
// blocks of kSignFlipBlock (parallel.hpp); block k draws from Philox::for_task(key0, key1,
// k), and each pattern of the block takes the next ceil(n / 64) raw words, bit i being bit
// (i mod 64) of word i / 64. So every count depends only on (data, key, number of
// patterns), never on the thread count, and a NumPy reference reading
// numpy.random.Philox(key=[key0, key1], counter=[0, 0, k, 0]) rebuilds every pattern.
// Monte Carlo counts include no identity: callers use (1 + count) / (n_patterns + 1).
//
// Ties (one rule): a pattern counts as at least as extreme when it is within the rounding
// error of any signed sum of the data, tol = 8 m eps sum_i |d_i| (m = number of nonzero
// d_i), in favour of the null (a larger p): "greater" is f_S <= tol, "less" f_S >= -tol,
// "two-sided" |T(s)| >= |T(identity)| - 2 tol. The exceptions are sign_flip_exact_pairs,
// which reproduces scipy.stats.permutation_test (and so truescore 0.7.4) bit for bit and
// therefore uses scipy's statistic and tie rule, and sign_flip_monte_carlo_pairs, its
// Monte Carlo estimate, which must count ties the same way to estimate the same p.
//
// Exact-size limits, one per exact algorithm, set by what it must visit or hold:
// enumeration that stores a value per pattern (the confidence bounds) 2^20; enumeration
// that only counts 2^30 (each pattern an O(n) evaluation); meet-in-the-middle counting of
// the two-sided statistic 2 x 2^20 sums (n <= 40).
#pragma once

#include <cstddef>
#include <cstdint>

namespace truescore {

// Patterns per Philox stream: kSignFlipBlock in parallel.hpp's table.
inline constexpr std::size_t kSignFlipMaxInterval = 20;      // sign_flip_test, exact
inline constexpr std::size_t kSignFlipMaxCount = 30;         // sign_flip_counts / _exact_pairs
inline constexpr std::size_t kSignFlipMaxMeetInMiddle = 40;  // sign_flip_count_two_sided

// The tie tolerance above: 8 m eps sum |d_i|.
double sign_flip_tolerance(const double* d, std::size_t n);

struct SignFlipCounts {
    std::int64_t n_patterns = 0;  // 2^n (exact) or the Monte Carlo draws
    std::int64_t greater = 0;     // patterns with T(s) >= T(identity) (within the tolerance)
    std::int64_t less = 0;        // patterns with T(s) <= T(identity)
    std::int64_t two_sided = 0;   // patterns with |T(s)| >= |T(identity)|
};

struct SignFlipResult {
    SignFlipCounts counts;
    double lower;  // lower confidence bound at tail level alpha_tail (-inf if none)
    double upper;  // upper confidence bound at tail level alpha_tail (+inf if none)
};

// Counts over all 2^n patterns (exact, n <= kSignFlipMaxCount) or n_resamples random
// ones. d: n >= 1 finite differences.
SignFlipCounts sign_flip_counts(const double* d, std::size_t n, bool exact,
                                std::int64_t n_resamples, std::uint64_t key0,
                                std::uint64_t key1, int n_threads);

// The same counts plus the confidence bounds obtained by inverting the test in a shift mu
// (exact: n <= kSignFlipMaxInterval). A pattern S supports "greater" at every mu at or
// above m_S = f_S / |S|, so the bounds are order statistics of the m_S: each is the
// one-sided bound of level 1 - alpha_tail, alpha_tail in (0, 1).
SignFlipResult sign_flip_test(const double* d, std::size_t n, bool exact,
                              std::int64_t n_resamples, std::uint64_t key0, std::uint64_t key1,
                              double alpha_tail, int n_threads);

// Exact enumeration of the 2^n swaps of pairs (a_i, b_i), n <= kSignFlipMaxCount, with
// scipy.stats.permutation_test's statistic and tie rule: mean(x) - mean(y), x_i and y_i
// being a_i, b_i or swapped, each mean summed in NumPy's pairwise order; statistics within
// 100 machine epsilons (relative) of the observed one count as ties.
SignFlipCounts sign_flip_exact_pairs(const double* a, const double* b, std::size_t n,
                                     int n_threads);

// Monte Carlo counterpart of sign_flip_exact_pairs: n_resamples random swap patterns
// (the stream layout above: ceil(n / 64) raw words per pattern), with the same statistic
// and tie rule, so its p-value estimates exactly the p-value the enumeration computes.
// screen (the default): each pattern is first classified from a signed sum of the
// differences with a proven error bound, and only near-ties are evaluated with the float
// statistic (signflip.cpp) -- the same counts, bit for bit, as screen = false, which
// evaluates every pattern with it (kept for the tests and benchmarks).
SignFlipCounts sign_flip_monte_carlo_pairs(const double* a, const double* b, std::size_t n,
                                           std::int64_t n_resamples, std::uint64_t key0,
                                           std::uint64_t key1, int n_threads, bool screen = true);

// Exact two-sided count (n <= kSignFlipMaxMeetInMiddle) by meet in the middle: all
// 2^h signed sums of the first h = n / 2 values against the sorted 2^(n-h) sums of the
// rest. Returned as a double (exact below 2^53).
double sign_flip_count_two_sided(const double* x, std::size_t n);

namespace detail {

// sign_flip_test's passes over its patterns' critical values after the kernel, each
// checking for a stop (throw_if_cancelled) every 2^16 entries, so Ctrl-C stops them
// within milliseconds at 10^9 patterns (exposed for _core.testing):
// drop_nans moves the non-NaN entries of x[0 .. n) to its front, in order, and returns
// their count; select_nth returns the value of rank k (0-based) among x[0 .. n) (no NaN),
// reordering x: the value std::nth_element leaves at x[k], bit for bit.
std::size_t drop_nans(double* x, std::size_t n);
double select_nth(double* x, std::size_t k, std::size_t n);

}  // namespace detail

}  // namespace truescore
