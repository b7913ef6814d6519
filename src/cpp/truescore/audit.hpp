// The matched-form audit: intervals for the mean public-minus-fresh gap, and the exact
// randomization test of "no form effect".
//
// Gaps d_i = public_i - mean_k fresh_ik lie in [-1, 1] (range R = 2). Every interval is a
// plain function of a raw pointer and a length so other C++ code (the calibration engine)
// can call it per audit without allocating Python objects; the batched entry point runs
// many audits of one size over a fixed partition, so the thread count never changes a
// result.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace truescore {

// An interval for the mean gap on the d scale. low/high are clipped to [-1, 1];
// half_width is the method's own half-width before clipping ((high - low) / 2 for betting).
struct GapInterval {
    double low;
    double high;
    double estimate;
    double half_width;
};

enum class IntervalMethod : int {
    hoeffding = 0,
    bernstein = 1,
    wald = 2,
    hoeffding_serfling = 3,
    betting = 4,
};
constexpr int kIntervalMethodCount = 5;

// Two-sided normal quantile Phi^{-1}(p) to full double precision (0 < p < 1).
double normal_quantile(double p);

// Empty string when the gaps are usable: n >= 2, all finite and in [-1, 1], and either
// population_size <= 0 (no population) or population_size >= n. Otherwise a message
// naming the problem, prefixed by `name`.
std::string check_gaps(const double* d, std::size_t n, double population_size, const char* name);

// ---- The interval formulas, shared by the per-sample intervals below and the
// moment-based ones (the calibration engine draws counts per lattice value and knows only
// the mean and variance of a sample). Constants that depend only on alpha are computed
// once per study, not once per audit.
struct IntervalConstants {
    double alpha;
    double log_2_alpha;  // ln(2 / alpha)
    double log_4_alpha;  // ln(4 / alpha)
    double z;            // normal quantile at 1 - alpha / 2 (NaN when not asked for)
    explicit IntervalConstants(double alpha, bool with_z = true);
};

// Half-widths on the d scale (range R = 2); variance is the unbiased sample variance.
double hoeffding_half_width(std::size_t n, const IntervalConstants& c);
double bernstein_half_width(double variance, std::size_t n, const IntervalConstants& c);
double wald_half_width(double variance, std::size_t n, double population_size,
                       const IntervalConstants& c);
double hoeffding_serfling_half_width(std::size_t n, double population_size,
                                     const IntervalConstants& c);
// estimate +- half, clipped to [-1, 1].
GapInterval symmetric_interval(double estimate, double half);

// Sample mean and unbiased variance of gaps in NumPy's summation order (np.mean,
// np.var(ddof=1)); the per-sample intervals below use exactly these.
double gap_mean(const double* d, std::size_t n);
double gap_variance(const double* d, std::size_t n, double mean);

// An order-free interval from a sample's mean and unbiased variance alone (every method
// but betting; throws std::invalid_argument for betting).
GapInterval moment_interval(IntervalMethod method, double mean, double variance, std::size_t n,
                            double population_size, const IntervalConstants& c);

// population_size <= 0 means "no finite population" (sampling with replacement).
// None of these validate: call check_gaps first.
GapInterval hoeffding_interval(const double* d, std::size_t n, double alpha);
GapInterval bernstein_interval(const double* d, std::size_t n, double alpha);
GapInterval wald_interval(const double* d, std::size_t n, double population_size, double alpha);
// Requires population_size >= n.
GapInterval hoeffding_serfling_interval(const double* d, std::size_t n, double population_size,
                                        double alpha);
// Betting CI (hedged capital, predictable plug-in bets for a fixed n, truncation 3/4,
// without-replacement conditional means when population_size > 0), endpoints by
// bisection to 1e-9 on the [0, 1] scale. The result depends on the order of d.
// `scratch` holds kBettingScratchPerParent * n doubles, or is nullptr (then allocated here).
constexpr std::size_t kBettingScratchPerParent = 4;
GapInterval betting_interval(const double* d, std::size_t n, double population_size, double alpha,
                             double* scratch = nullptr);

GapInterval gap_interval(IntervalMethod method, const double* d, std::size_t n,
                         double population_size, double alpha, double* scratch = nullptr);

// Many audits of size n at once: d is row-major (n_audits, n); population_size is nullptr
// (none) or one value per audit. For each of n_methods methods and each audit, writes
// out[m * n_audits + a] for low, high, estimate, half_width (each caller-owned,
// n_methods * n_audits long). Throws std::invalid_argument naming the first bad audit.
void gap_intervals_dense(const IntervalMethod* methods, std::size_t n_methods, const double* d,
                         std::size_t n_audits, std::size_t n, const double* population_size,
                         double alpha, double* low, double* high, double* estimate,
                         double* half_width, int n_threads);

// ---- Exact randomization test -------------------------------------------------------
//
// Null: within each parent the public label is exchangeable with the K fresh labels, so
// the public value is a uniform draw from the parent's K + 1 values, independently across
// parents. With integer values a_ij (j = 0 public), U = sum_i a_i,public has the exact
// null distribution given by the convolution of the per-parent uniforms, and
// K * L * T = (K + 1) U - sum_ij a_ij for the gap total T on a lattice of step 1/L.
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
