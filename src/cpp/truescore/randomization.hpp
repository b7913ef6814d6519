// The exact randomization test of "no form effect" for a matched-form audit.
//
// Null: within each parent the public label is exchangeable with the K fresh labels, so
// the public value is a uniform draw from the parent's K + 1 values, independently across
// parents. With integer values a_ij (j = 0 public), U = sum_i a_i,public has the exact
// null distribution given by the convolution of the per-parent uniforms, and
// K * L * T = (K + 1) U - sum_ij a_ij for the gap total T on a lattice of step 1/L.
#pragma once

#include <cstddef>
#include <cstdint>

namespace truescore {

struct RandomizationPValues {
    double p_greater;    // P(T >= t_obs)
    double p_less;       // P(T <= t_obs)
    double p_two_sided;  // P(|T| >= |t_obs|); E T = 0 under the null. Never a doubled p.
};

// Binary labels: n_by_sum[s] = number of parents whose K + 1 labels sum to s (s = 0..K+1),
// u_obs = number of parents whose public label is 1. U = sum_s Bin(n_s, s / (K + 1)).
RandomizationPValues randomization_test_binary(const std::int64_t* n_by_sum, int n_forms,
                                               std::int64_t u_obs);

// Integer lattice: values row-major (n, K + 1), column 0 the public label. Exact by
// direct convolution of the per-parent null distributions.
RandomizationPValues randomization_test_lattice(const std::int64_t* values, std::size_t n,
                                                int n_forms);

// Monte Carlo with the +1 correction, for scores not on a lattice: values row-major
// (n, K + 1) in [0, 1]. Draw b uses the Philox stream of task b under (key0, key1) only.
RandomizationPValues randomization_test_monte_carlo(const double* values, std::size_t n,
                                                    int n_forms, std::size_t n_draws,
                                                    std::uint64_t key0, std::uint64_t key1,
                                                    int n_threads);

// The whole test from raw scores. public_scores (n,), fresh (n, K) row-major, values in
// [0, 1]. method: 0 auto (binary closed form, else the smallest lattice {0, 1/L, .., 1}
// with L <= max_denominator, else Monte Carlo), 1 exact (throws when no lattice fits),
// 2 Monte Carlo. Throws std::invalid_argument naming public/fresh for bad scores.
struct RandomizationOutcome {
    RandomizationPValues p;
    int method;                 // 0 exact binary, 1 exact lattice, 2 Monte Carlo
    std::int64_t denominator;   // L, or 0 for Monte Carlo
    double statistic;           // sum of gaps, in NumPy's summation order
    std::int64_t informative;   // parents whose K + 1 scores are not all equal
};
RandomizationOutcome randomization_test(const double* public_scores, const double* fresh,
                                        std::size_t n, int n_forms, int method,
                                        std::int64_t max_denominator, std::size_t n_draws,
                                        std::uint64_t key0, std::uint64_t key1, int n_threads);

}  // namespace truescore
