// The paired sign-flip (randomization) test of a mean difference, and the confidence
// bounds obtained by inverting it.
//
// Under the null that each paired difference d_i is symmetric about mu, flipping the
// sign of any subset of the centred differences leaves their joint law unchanged. For
// a flip pattern s (a subset S of indices flipped), T(s) = sum_i s_i (d_i - mu) and
//
//     T(s) >= T(identity)   <=>   sum_{i in S} d_i <= |S| mu,
//
// so a pattern supports "greater" at every mu at or above the mean of its flipped
// differences, m_S = sum_{i in S} d_i / |S|. The p-value at mu is a count of such
// patterns, and the confidence bounds are order statistics of the m_S.
//
// Exact: all 2^n patterns (n <= kMaxExact). Monte Carlo: n_resamples random patterns,
// p = (1 + count) / (n_resamples + 1). Resample b draws its signs from the Philox stream
// of task b / kSignFlipBlock, so results do not depend on the thread count.
#pragma once

#include <cstddef>
#include <cstdint>

namespace truescore {

inline constexpr std::size_t kSignFlipMaxExact = 20;
inline constexpr std::int64_t kSignFlipBlock = 256;

struct SignFlipResult {
    std::int64_t n_patterns;       // 2^n (exact) or n_resamples (Monte Carlo)
    std::int64_t count_greater;    // patterns with T(s) >= T(identity), identity included
    std::int64_t count_less;       // patterns with T(s) <= T(identity)
    std::int64_t count_two_sided;  // patterns with |T(s)| >= |T(identity)|
    double lower;                  // lower confidence bound at tail level alpha_tail (-inf if none)
    double upper;                  // upper confidence bound at tail level alpha_tail (+inf if none)
};

// d: n finite differences (n >= 1; n <= kSignFlipMaxExact when exact). alpha_tail in
// (0, 1): each bound is the one-sided bound of level 1 - alpha_tail. Ties are decided
// with a tolerance of 8 n eps sum|d_i|, counted in favour of the null (a larger p).
SignFlipResult sign_flip_test(const double* d, std::size_t n, bool exact,
                              std::int64_t n_resamples, std::uint64_t key0, std::uint64_t key1,
                              double alpha_tail, int n_threads);

}  // namespace truescore
