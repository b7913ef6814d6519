// Intervals for the mean public-minus-fresh gap of a matched-form audit.
//
// Gaps d_i = public_i - mean_k fresh_ik lie in [-1, 1] (range R = 2). Every interval is a
// plain function of a raw pointer and a length so other C++ code (the calibration engine)
// can call it per audit without allocating Python objects; the batched entry point runs
// many audits of one size over a fixed partition, so the thread count never changes a
// result. The betting interval is in betting.hpp, the randomization test in
// randomization.hpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "truescore/gap_interval.hpp"

namespace truescore {

// ---- The registry of interval methods ----------------------------------------------
//
// One enum (bound to Python as _core.IntervalMethod) and one table of per-method traits
// beside it (bound as _core.interval_method_traits()): the audit, the calibration engine
// and the command line read these, so a new order-free interval is one formula
// (moment_interval and gap_interval below), one row here, one Python wrapper.
enum class IntervalMethod : int {
    hoeffding = 0,
    bernstein = 1,
    wald = 2,
    hoeffding_serfling = 3,
    betting = 4,
};

struct IntervalTraits {
    IntervalMethod method;
    const char* name;       // the Python name (and the enum member's)
    bool needs_population;  // requires the population size N
    bool order_dependent;   // depends on the order of the sample, not only on its moments:
                            // no moment_interval, no sampling by counts per value
    bool uses_variance;     // reads the sample variance
    bool may_be_fallback;   // may serve as the fallback under the guardrail (Wald is the
                            // primary rule the fallback replaces)
};

// Rows in enum order (kIntervalTraits[code].method == code).
inline constexpr IntervalTraits kIntervalTraits[] = {
    // method                               name                  N      order  var    fallback
    {IntervalMethod::hoeffding,             "hoeffding",          false, false, false, true},
    {IntervalMethod::bernstein,             "bernstein",          false, false, true,  true},
    {IntervalMethod::wald,                  "wald",               false, false, true,  false},
    {IntervalMethod::hoeffding_serfling,    "hoeffding_serfling", true,  false, false, true},
    {IntervalMethod::betting,               "betting",            false, true,  false, true},
};
constexpr int kIntervalMethodCount = static_cast<int>(sizeof kIntervalTraits / sizeof kIntervalTraits[0]);

inline const IntervalTraits& interval_traits(IntervalMethod method) {
    return kIntervalTraits[static_cast<int>(method)];
}

// Empty string when the gaps are usable: n >= 2, all finite and in [-1, 1], and either
// population_size <= 0 (no population) or population_size >= n. Otherwise a message
// naming the problem, prefixed by `name`.
std::string check_gaps(const double* d, std::size_t n, double population_size, const char* name);

// The matched-form audit's gaps from its scores, with NumPy's numbers: d_i = public_i -
// (sum_k fresh_ik) / K, and the sums of public, fresh (all n K scores, row after row) and
// d in NumPy's pairwise order, so that sum / count is np.mean's value; `nonzero` counts
// the d_i != 0. fresh is (n, K) row-major, 1 <= K < 8: a row of under eight scores is
// summed in order, which is NumPy's order for a row whichever way it walks the array (at
// eight and more its pairwise leaf and a walk across rows differ, so the caller keeps
// NumPy for those). Returns false, the outputs unspecified, when a score is not a number
// in [0, 1] or is -0.0 (whose sign NumPy's sums would carry differently): the caller's
// validation then decides.
struct MatchedFormSums {
    std::int64_t nonzero;
    double public_sum;
    double fresh_sum;
    double gap_sum;
};
bool matched_form_gaps(const double* public_scores, const double* fresh, std::size_t n, std::size_t k, double* d,
                       MatchedFormSums* sums);

// ---- The interval formulas, shared by the per-sample intervals below and the
// moment-based ones (the calibration engine draws counts per lattice value and knows only
// the mean and variance of a sample). Constants that depend only on alpha are computed
// once per study, not once per audit.
struct IntervalConstants {
    double alpha;
    double log_2_alpha;  // ln(2 / alpha), as ln 2 - ln alpha (2 / alpha is inf for a subnormal alpha)
    double log_4_alpha;  // ln(4 / alpha), as ln 4 - ln alpha
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

// The values the mean gap of N parents can take when n of them were scored with mean
// `mean` and the N - n others lie anywhere in [-1, 1]: [(S - (N - n)) / N, (S + (N - n)) / N],
// S = n mean, rounded outward by kFeasibleSlack (the rounding of S = n mean and of the
// divisions is far below it for any n < 2^40); at a census (n == N) exactly the point mean.
// No interval of a finite population can honestly reach outside it.
constexpr double kFeasibleSlack = 64.0 * 2.220446049250313e-16;
struct FeasibleRange {
    double low;
    double high;
};
FeasibleRange feasible_range(double mean, std::size_t n, double population_size);
// `iv` intersected with feasible_range(iv.estimate, n, population_size) when
// population_size > 0 (unchanged otherwise). An empty betting set (low > high) stays as
// it is; a betting interval that leaves the range entirely becomes empty (width 0), and a
// betting interval's half_width is recomputed as (high - low) / 2. For the symmetric
// methods half_width stays the method's own (before clipping), as for the clip to [-1, 1].
GapInterval within_feasible_range(IntervalMethod method, GapInterval iv, std::size_t n,
                                  double population_size);

// An order-free interval from a sample's mean and unbiased variance alone (every method
// whose traits are not order_dependent; throws std::invalid_argument for the others),
// intersected with the feasible range when population_size > 0.
GapInterval moment_interval(IntervalMethod method, double mean, double variance, std::size_t n,
                            double population_size, const IntervalConstants& c);

// The per-sample intervals: the sample's mean and unbiased variance in NumPy's summation
// order (numpy_mean, numpy_variance of numeric.hpp) fed to the formulas above. The betting
// interval is in betting.hpp. population_size <= 0 means "no finite population"
// (sampling with replacement). None of these validate: call check_gaps first.
GapInterval hoeffding_interval(const double* d, std::size_t n, double alpha);
GapInterval bernstein_interval(const double* d, std::size_t n, double alpha);
GapInterval wald_interval(const double* d, std::size_t n, double population_size, double alpha);
// Requires population_size >= n.
GapInterval hoeffding_serfling_interval(const double* d, std::size_t n, double population_size,
                                        double alpha);
// Any method by its enum, intersected with the feasible range when population_size > 0
// (the per-method functions above are not); `scratch` is passed on to betting_interval.
GapInterval gap_interval(IntervalMethod method, const double* d, std::size_t n,
                         double population_size, double alpha, double* scratch = nullptr);

// Many audits of size n at once: d is row-major (n_audits, n); population_size is nullptr
// (none) or one value per audit (each interval then within_feasible_range, by gap_interval). For each of n_methods methods and each audit, writes
// out[m * n_audits + a] for low, high, estimate, half_width (each caller-owned,
// n_methods * n_audits long). Throws std::invalid_argument naming the first bad audit.
void gap_intervals(const IntervalMethod* methods, std::size_t n_methods, const double* d,
                         std::size_t n_audits, std::size_t n, const double* population_size,
                         double alpha, double* low, double* high, double* estimate,
                         double* half_width, int n_threads);

}  // namespace truescore
