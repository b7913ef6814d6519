#include "truescore/audit.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "truescore/parallel.hpp"
#include "truescore/random.hpp"
#include "truescore/summation.hpp"

namespace truescore {

namespace {

constexpr double kRange = 2.0;           // d in [-1, 1]
constexpr double kBetTruncation = 0.75;  // c in Waudby-Smith & Ramdas
constexpr double kBisectionTolerance = 1e-9;

double mean_of(const double* d, std::size_t n) { return numpy_sum(d, n) / static_cast<double>(n); }

// Unbiased variance in NumPy's order (np.var(ddof=1)): deviations from the NumPy mean,
// squared, pairwise-summed, divided by n - 1.
double variance_of(const double* d, std::size_t n, double mean) {
    const double ss = 0.0 + pairwise_sum(n, [d, mean](std::size_t i) {
                          const double e = d[i] - mean;
                          return e * e;
                      });
    return ss / static_cast<double>(n - 1);
}

}  // namespace

double gap_mean(const double* d, std::size_t n) { return mean_of(d, n); }
double gap_variance(const double* d, std::size_t n, double mean) { return variance_of(d, n, mean); }

GapInterval symmetric_interval(double estimate, double half) {
    return {std::max(-1.0, estimate - half), std::min(1.0, estimate + half), estimate, half};
}

double normal_quantile(double p) {
    if (!(p > 0.0 && p < 1.0)) return std::numeric_limits<double>::quiet_NaN();
    // Acklam's rational approximation (relative error ~1e-9), then two Halley steps on
    // Phi(x) - p using erfc, which brings it to full double precision.
    static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,
                               -2.759285104469687e+02, 1.383577518672690e+02,
                               -3.066479806614716e+01, 2.506628277459239e+00};
    static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02,
                               -1.556989798598866e+02, 6.680131188771972e+01,
                               -1.328068155288572e+01};
    static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01,
                               -2.400758277161838e+00, -2.549732539343734e+00,
                               4.374664141464968e+00,  2.938163982698783e+00};
    static const double e[] = {7.784695709041462e-03, 3.224671290700398e-01,
                               2.445134137142996e+00, 3.754408661907416e+00};
    const double p_low = 0.02425;
    double x;
    if (p < p_low) {
        const double q = std::sqrt(-2.0 * std::log(p));
        x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
            ((((e[0] * q + e[1]) * q + e[2]) * q + e[3]) * q + 1.0);
    } else if (p <= 1.0 - p_low) {
        const double q = p - 0.5, r = q * q;
        x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
            (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1.0);
    } else {
        const double q = std::sqrt(-2.0 * std::log1p(-p));
        x = -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
            ((((e[0] * q + e[1]) * q + e[2]) * q + e[3]) * q + 1.0);
    }
    const double sqrt2pi = 2.5066282746310002;
    for (int step = 0; step < 2; ++step) {
        // Work in the smaller tail so the residual is not swamped by rounding.
        double err;
        if (x < 0) {
            err = 0.5 * std::erfc(-x / std::sqrt(2.0)) - p;
        } else {
            err = (1.0 - p) - 0.5 * std::erfc(x / std::sqrt(2.0));
        }
        const double u = err * sqrt2pi * std::exp(0.5 * x * x);
        x = x - u / (1.0 + 0.5 * x * u);
    }
    return x;
}

std::string check_gaps(const double* d, std::size_t n, double population_size, const char* name) {
    const std::string prefix(name);
    if (n < 2) return prefix + " needs at least 2 parents; got " + std::to_string(n);
    for (std::size_t i = 0; i < n; ++i) {
        if (!std::isfinite(d[i]))
            return prefix + " contains a non-finite value (NaN or inf) at position " + std::to_string(i);
        if (d[i] < -1.0 || d[i] > 1.0)
            return prefix + " must lie in [-1, 1]; position " + std::to_string(i) + " holds " +
                   std::to_string(d[i]);
    }
    if (population_size > 0.0 && population_size < static_cast<double>(n))
        return "population_size must be at least the number of parents n = " + std::to_string(n) +
               "; got " + std::to_string(population_size);
    return {};
}

IntervalConstants::IntervalConstants(double a, bool with_z)
    : alpha(a), log_2_alpha(std::log(2.0 / a)), log_4_alpha(std::log(4.0 / a)),
      z(with_z ? normal_quantile(1.0 - a / 2.0) : std::numeric_limits<double>::quiet_NaN()) {}

double hoeffding_half_width(std::size_t n, const IntervalConstants& c) {
    return kRange * std::sqrt(c.log_2_alpha / (2.0 * static_cast<double>(n)));
}

double bernstein_half_width(double variance, std::size_t n, const IntervalConstants& c) {
    const double nd = static_cast<double>(n), l = c.log_4_alpha;
    return std::sqrt(2.0 * variance * l / nd) + 7.0 * kRange * l / (3.0 * (nd - 1.0));
}

double wald_half_width(double variance, std::size_t n, double population_size,
                       const IntervalConstants& c) {
    const double nd = static_cast<double>(n);
    const double fpc = population_size > 0.0 ? 1.0 - nd / population_size : 1.0;
    return c.z * std::sqrt(fpc * variance / nd);
}

double hoeffding_serfling_half_width(std::size_t n, double population_size,
                                     const IntervalConstants& c) {
    const double nd = static_cast<double>(n);
    return kRange * std::sqrt((1.0 - (nd - 1.0) / population_size) * c.log_2_alpha / (2.0 * nd));
}

GapInterval moment_interval(IntervalMethod method, double mean, double variance, std::size_t n,
                            double population_size, const IntervalConstants& c) {
    switch (method) {
        case IntervalMethod::hoeffding: return symmetric_interval(mean, hoeffding_half_width(n, c));
        case IntervalMethod::bernstein:
            return symmetric_interval(mean, bernstein_half_width(variance, n, c));
        case IntervalMethod::wald:
            return symmetric_interval(mean, wald_half_width(variance, n, population_size, c));
        case IntervalMethod::hoeffding_serfling:
            return symmetric_interval(mean, hoeffding_serfling_half_width(n, population_size, c));
        case IntervalMethod::betting: break;
    }
    throw std::invalid_argument("the betting interval depends on the order of the sample, not on its moments");
}

GapInterval hoeffding_interval(const double* d, std::size_t n, double alpha) {
    return symmetric_interval(mean_of(d, n), hoeffding_half_width(n, IntervalConstants(alpha, false)));
}

GapInterval bernstein_interval(const double* d, std::size_t n, double alpha) {
    const double m = mean_of(d, n), s2 = variance_of(d, n, m);
    return symmetric_interval(m, bernstein_half_width(s2, n, IntervalConstants(alpha, false)));
}

GapInterval wald_interval(const double* d, std::size_t n, double population_size, double alpha) {
    const double m = mean_of(d, n), s2 = variance_of(d, n, m);
    return symmetric_interval(m, wald_half_width(s2, n, population_size, IntervalConstants(alpha)));
}

GapInterval hoeffding_serfling_interval(const double* d, std::size_t n, double population_size,
                                        double alpha) {
    return symmetric_interval(mean_of(d, n),
                              hoeffding_serfling_half_width(n, population_size, IntervalConstants(alpha, false)));
}

namespace {

// The betting state that does not depend on the candidate mean: x_t on [0, 1], the
// predictable plug-in bet lambda_t (from x_1..x_{t-1}), and the without-replacement
// conditional mean m_t = (N m - S_{t-1}) / (N - t + 1) written as slope[t] m - offset[t]
// (slope = N / (N - t + 1), offset = S_{t-1} / (N - t + 1); 1 and 0 without a population),
// so the inner loop, run ~60 times per interval, multiplies instead of dividing.
struct BettingPath {
    const double* x;
    const double* lam;
    const double* slope;
    const double* offset;
    std::size_t n;
    double alpha;

    // True when m lies below the interval: the capital betting on "mean > m" reaches
    // 2/alpha (hedged with weight 1/2) at some t, or m is infeasible given the draws.
    bool rejects_from_below(double m) const {
        const double threshold = 2.0 / alpha;  // 0.5 * capital >= 1/alpha, exactly
        double capital = 1.0;
        for (std::size_t i = 0; i < n; ++i) {
            const double mt = slope[i] * m - offset[i];
            if (mt < 0.0) return true;
            double l = lam[i];
            // min(lam, c / mt) without the division unless the truncation binds
            if (l * mt > kBetTruncation) l = kBetTruncation / mt;
            capital *= 1.0 + l * (x[i] - mt);
            if (capital >= threshold) return true;
        }
        return false;
    }

    bool rejects_from_above(double m) const {
        const double threshold = 2.0 / alpha;
        double capital = 1.0;
        for (std::size_t i = 0; i < n; ++i) {
            const double mt = slope[i] * m - offset[i];
            if (mt > 1.0) return true;
            double l = lam[i];
            if (l * (1.0 - mt) > kBetTruncation) l = kBetTruncation / (1.0 - mt);
            capital *= 1.0 - l * (x[i] - mt);
            if (capital >= threshold) return true;
        }
        return false;
    }
};

// The edge of the candidate means m in [0, 1] that `rejects` rejects, when the rejected
// ones form one end of [0, 1] (the end `rejected_end`, 0 or 1). Bisection to
// kBisectionTolerance returns the outer (last rejected) point, so the interval it bounds is
// never narrower than the exact set.
template <class Rejects>
double rejection_edge(const Rejects& rejects, double rejected_end) {
    const double kept_end = 1.0 - rejected_end;
    if (!rejects(rejected_end)) return rejected_end;
    if (rejects(kept_end)) return kept_end;
    double rejected = rejected_end, kept = kept_end;
    while (std::abs(kept - rejected) > kBisectionTolerance) {
        const double mid = 0.5 * (rejected + kept);
        if (rejects(mid)) rejected = mid; else kept = mid;
    }
    return rejected;
}

}  // namespace

GapInterval betting_interval(const double* d, std::size_t n, double population_size, double alpha,
                             double* scratch) {
    std::vector<double> own;
    if (scratch == nullptr) {
        own.resize(kBettingScratchPerParent * n);
        scratch = own.data();
    }
    double* x = scratch;
    double* lam = scratch + n;
    double* slope = scratch + 2 * n;
    double* offset = scratch + 3 * n;
    const double nd = static_cast<double>(n);
    const double log_term = std::log(2.0 / alpha);
    const bool finite = population_size > 0.0;
    double s = 0.0, sq = 0.0, var_prev = 0.25;
    for (std::size_t i = 0; i < n; ++i) {
        const double t = static_cast<double>(i + 1);
        x[i] = (d[i] + 1.0) * 0.5;
        lam[i] = std::sqrt(2.0 * log_term / (nd * var_prev));
        if (finite) {
            const double remaining = population_size - static_cast<double>(i);
            slope[i] = population_size / remaining;
            offset[i] = s / remaining;
        } else {
            slope[i] = 1.0;
            offset[i] = 0.0;
        }
        s += x[i];
        const double mu = (0.5 + s) / (t + 1.0);
        const double dev = x[i] - mu;
        sq += dev * dev;
        var_prev = (0.25 + sq) / (t + 1.0);
    }
    const BettingPath path{x, lam, slope, offset, n, alpha};

    double lower = rejection_edge([&](double m) { return path.rejects_from_below(m); }, 0.0);
    double upper = rejection_edge([&](double m) { return path.rejects_from_above(m); }, 1.0);
    if (lower > upper) {  // both capitals large at once: no m survives; report the midpoint
        lower = upper = 0.5 * (lower + upper);
    }
    const double low = 2.0 * lower - 1.0, high = 2.0 * upper - 1.0;
    return {low, high, mean_of(d, n), 0.5 * (high - low)};
}

GapInterval gap_interval(IntervalMethod method, const double* d, std::size_t n,
                         double population_size, double alpha, double* scratch) {
    switch (method) {
        case IntervalMethod::hoeffding: return hoeffding_interval(d, n, alpha);
        case IntervalMethod::bernstein: return bernstein_interval(d, n, alpha);
        case IntervalMethod::wald: return wald_interval(d, n, population_size, alpha);
        case IntervalMethod::hoeffding_serfling:
            if (!(population_size > 0.0))
                throw std::invalid_argument("population_size is required for the Hoeffding-Serfling interval");
            return hoeffding_serfling_interval(d, n, population_size, alpha);
        case IntervalMethod::betting: return betting_interval(d, n, population_size, alpha, scratch);
    }
    throw std::invalid_argument("unknown interval method");
}

void gap_intervals_dense(const IntervalMethod* methods, std::size_t n_methods, const double* d,
                         std::size_t n_audits, std::size_t n, const double* population_size,
                         double alpha, double* low, double* high, double* estimate,
                         double* half_width, int n_threads) {
    if (!(alpha > 0.0 && alpha < 1.0))
        throw std::invalid_argument("alpha must lie in (0, 1); got " + std::to_string(alpha));
    for (std::size_t k = 0; k < n_methods; ++k) {
        const int code = static_cast<int>(methods[k]);
        if (code < 0 || code >= kIntervalMethodCount) throw std::invalid_argument("unknown interval method");
    }
    for (std::size_t a = 0; a < n_audits; ++a) {
        const double pop = population_size ? population_size[a] : 0.0;
        std::string msg = check_gaps(d + a * n, n, pop, "gaps");
        if (!msg.empty()) {
            if (n_audits > 1) msg = "audit " + std::to_string(a) + ": " + msg;
            throw std::invalid_argument(msg);
        }
        for (std::size_t k = 0; k < n_methods; ++k)
            if (methods[k] == IntervalMethod::hoeffding_serfling && !(pop > 0.0))
                throw std::invalid_argument("population_size is required for the Hoeffding-Serfling interval");
    }
    parallel_for_blocks(n_audits, n_threads, kMinAuditsPerThread, [&](std::size_t begin, std::size_t end) {
        std::vector<double> scratch(kBettingScratchPerParent * n);
        for (std::size_t a = begin; a < end; ++a) {
            const double pop = population_size ? population_size[a] : 0.0;
            for (std::size_t k = 0; k < n_methods; ++k) {
                const GapInterval r = gap_interval(methods[k], d + a * n, n, pop, alpha, scratch.data());
                const std::size_t o = k * n_audits + a;
                low[o] = r.low;
                high[o] = r.high;
                estimate[o] = r.estimate;
                half_width[o] = r.half_width;
            }
        }
    });
}

// ---- Randomization test ---------------------------------------------------------------

namespace {

// Bin(n, p) pmf over 0..n: ratios outward from the mode, then normalised, so every
// entry has relative error O(n eps) until it underflows.
std::vector<double> binomial_pmf(std::int64_t n, double p) {
    std::vector<double> f(static_cast<std::size_t>(n) + 1, 0.0);
    if (p <= 0.0) { f[0] = 1.0; return f; }
    if (p >= 1.0) { f[static_cast<std::size_t>(n)] = 1.0; return f; }
    const double odds = p / (1.0 - p);
    std::int64_t mode = static_cast<std::int64_t>(std::floor((static_cast<double>(n) + 1.0) * p));
    mode = std::min(mode, n);
    f[static_cast<std::size_t>(mode)] = 1.0;
    for (std::int64_t k = mode; k < n; ++k)
        f[static_cast<std::size_t>(k + 1)] =
            f[static_cast<std::size_t>(k)] * (static_cast<double>(n - k) / static_cast<double>(k + 1)) * odds;
    for (std::int64_t k = mode; k > 0; --k)
        f[static_cast<std::size_t>(k - 1)] =
            f[static_cast<std::size_t>(k)] * (static_cast<double>(k) / static_cast<double>(n - k + 1)) / odds;
    double total = 0.0;
    {
        // The pmf is unimodal: add both tails inward, towards the mode.
        std::size_t lo = 0, hi = f.size() - 1;
        while (lo < hi) {
            if (f[lo] <= f[hi]) total += f[lo++]; else total += f[hi--];
        }
        total += f[lo];
    }
    for (double& v : f) v /= total;
    return f;
}

std::vector<double> convolve(const std::vector<double>& a, const std::vector<double>& b) {
    std::vector<double> out(a.size() + b.size() - 1, 0.0);
    for (std::size_t i = 0; i < a.size(); ++i) {
        const double ai = a[i];
        if (ai == 0.0) continue;
        double* o = out.data() + i;
        for (std::size_t j = 0; j < b.size(); ++j) o[j] += ai * b[j];
    }
    return out;
}

// Upper and lower tail sums of a pmf on 0..W, each accumulated from its extreme end so
// tiny tails keep their relative precision. ge[k] = P(X >= k), le[k] = P(X <= k).
void tails(const std::vector<double>& f, std::vector<double>& ge, std::vector<double>& le) {
    const std::size_t w = f.size();
    ge.assign(w, 0.0);
    le.assign(w, 0.0);
    double s = 0.0;
    for (std::size_t k = w; k-- > 0;) { s += f[k]; ge[k] = s; }
    s = 0.0;
    for (std::size_t k = 0; k < w; ++k) { s += f[k]; le[k] = s; }
}

// P(A + B >= u) and P(A + B <= u) for independent A (pmf a on 0..) and B (tails of b).
struct SumTails {
    const std::vector<double>& a;
    const std::vector<double>& b_ge;
    const std::vector<double>& b_le;

    double at_least(std::int64_t u) const {
        const std::int64_t wb = static_cast<std::int64_t>(b_ge.size()) - 1;
        double s = 0.0;
        for (std::int64_t k = static_cast<std::int64_t>(a.size()) - 1; k >= 0; --k) {
            const std::int64_t j = u - k;
            if (j > wb) break;  // B cannot reach; larger j for smaller k
            s += a[static_cast<std::size_t>(k)] * (j <= 0 ? 1.0 : b_ge[static_cast<std::size_t>(j)]);
        }
        return std::min(1.0, s);
    }
    double at_most(std::int64_t u) const {
        const std::int64_t wb = static_cast<std::int64_t>(b_le.size()) - 1;
        double s = 0.0;
        for (std::int64_t k = 0; k < static_cast<std::int64_t>(a.size()); ++k) {
            const std::int64_t j = u - k;
            if (j < 0) break;
            s += a[static_cast<std::size_t>(k)] * (j >= wb ? 1.0 : b_le[static_cast<std::size_t>(j)]);
        }
        return std::min(1.0, s);
    }
};

// Integer division rounding towards -inf / +inf.
std::int64_t floor_div(std::int64_t a, std::int64_t b) {
    std::int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
    return q;
}
std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return -floor_div(-a, b); }

// p-values for U = A + B + shift, where (K + 1) U - total is the (scaled) statistic.
RandomizationPValues p_values_from(const SumTails& st, std::int64_t shift, std::int64_t kp1,
                                   std::int64_t total, std::int64_t u_obs) {
    RandomizationPValues r{};
    r.p_greater = st.at_least(u_obs - shift);
    r.p_less = st.at_most(u_obs - shift);
    const std::int64_t dev = kp1 * u_obs - total;
    const std::int64_t a = dev < 0 ? -dev : dev;
    if (a == 0) {
        r.p_two_sided = 1.0;
    } else {
        // |(K+1) U - total| >= a  <=>  U >= ceil((total + a)/(K+1)) or U <= floor((total - a)/(K+1))
        const std::int64_t hi = ceil_div(total + a, kp1), lo = floor_div(total - a, kp1);
        r.p_two_sided = std::min(1.0, st.at_least(hi - shift) + st.at_most(lo - shift));
    }
    return r;
}

}  // namespace

RandomizationPValues randomization_test_binary(const std::int64_t* n_by_sum, int n_forms,
                                               std::int64_t u_obs) {
    if (n_forms < 1) throw std::invalid_argument("the number of fresh forms must be at least 1");
    const std::int64_t kp1 = n_forms + 1;
    // Parents summing to K + 1 always contribute 1; to 0, nothing. The informative ones
    // contribute Bin(n_s, s / (K + 1)); the largest group goes last (tails, O(n) sum).
    std::int64_t shift = n_by_sum[kp1], total = kp1 * n_by_sum[kp1];
    int last = -1;
    for (int s = 1; s <= n_forms; ++s) {
        if (n_by_sum[s] < 0) throw std::invalid_argument("negative parent count");
        total += s * n_by_sum[s];
        if (n_by_sum[s] > 0 && (last < 0 || n_by_sum[s] > n_by_sum[last])) last = s;
    }
    std::vector<double> a{1.0};
    for (int s = 1; s <= n_forms; ++s) {
        if (s == last || n_by_sum[s] == 0) continue;
        a = convolve(a, binomial_pmf(n_by_sum[s], static_cast<double>(s) / static_cast<double>(kp1)));
    }
    std::vector<double> b{1.0};
    if (last > 0) b = binomial_pmf(n_by_sum[last], static_cast<double>(last) / static_cast<double>(kp1));
    std::vector<double> ge, le;
    tails(b, ge, le);
    const SumTails st{a, ge, le};
    return p_values_from(st, shift, kp1, total, u_obs);
}

RandomizationPValues randomization_test_lattice(const std::int64_t* values, std::size_t n,
                                                int n_forms) {
    if (n_forms < 1) throw std::invalid_argument("the number of fresh forms must be at least 1");
    const std::size_t kp1 = static_cast<std::size_t>(n_forms) + 1;
    std::int64_t shift = 0, total = 0, u_obs = 0;
    std::vector<double> a{1.0};
    for (std::size_t i = 0; i < n; ++i) {
        const std::int64_t* v = values + i * kp1;
        std::int64_t lo = v[0], hi = v[0];
        for (std::size_t j = 0; j < kp1; ++j) {
            if (v[j] < 0) throw std::invalid_argument("lattice values must be non-negative");
            lo = std::min(lo, v[j]);
            hi = std::max(hi, v[j]);
            total += v[j];
        }
        u_obs += v[0];
        shift += lo;
        if (hi == lo) continue;
        std::vector<double> f(static_cast<std::size_t>(hi - lo) + 1, 0.0);
        for (std::size_t j = 0; j < kp1; ++j) f[static_cast<std::size_t>(v[j] - lo)] += 1.0;
        for (double& x : f) x /= static_cast<double>(kp1);
        a = convolve(a, f);
    }
    std::vector<double> ge{1.0}, le{1.0};
    const SumTails st{a, ge, le};
    return p_values_from(st, shift, static_cast<std::int64_t>(kp1), total, u_obs);
}

RandomizationPValues randomization_test_monte_carlo(const double* values, std::size_t n,
                                                    int n_forms, std::size_t n_draws,
                                                    std::uint64_t key0, std::uint64_t key1,
                                                    int n_threads) {
    if (n_forms < 1) throw std::invalid_argument("the number of fresh forms must be at least 1");
    if (n_draws < 1) throw std::invalid_argument("n_resamples must be at least 1");
    const std::size_t kp1 = static_cast<std::size_t>(n_forms) + 1;
    const double kd = static_cast<double>(n_forms);
    // gap[i * kp1 + j]: the parent's gap if label j were the public one.
    std::vector<double> gap(n * kp1);
    for (std::size_t i = 0; i < n; ++i) {
        double s = 0.0;
        for (std::size_t j = 0; j < kp1; ++j) s += values[i * kp1 + j];
        for (std::size_t j = 0; j < kp1; ++j) {
            const double v = values[i * kp1 + j];
            gap[i * kp1 + j] = v - (s - v) / kd;
        }
    }
    double t_obs = 0.0;
    for (std::size_t i = 0; i < n; ++i) t_obs += gap[i * kp1];
    // Ties within rounding count as at least as extreme (conservative).
    const double tol = 1e-9 * std::max(1.0, static_cast<double>(n) * 1e-3);
    struct Counts {
        std::uint64_t ge = 0, le = 0, two = 0;
    };
    std::atomic<std::uint64_t> cge{0}, cle{0}, ctwo{0};
    const StreamBlocks streams{key0, key1, n_draws, kReplicateBlock};
    for_each_stream_block(
        streams, n_threads, kMinDrawsPerThread, [] { return Counts{}; },
        [&](Counts& c, Philox& gen, std::size_t, std::size_t, std::size_t) {
            double t = 0.0;
            for (std::size_t i = 0; i < n; ++i) t += gap[i * kp1 + gen.below(kp1)];
            c.ge += t >= t_obs - tol;
            c.le += t <= t_obs + tol;
            c.two += std::fabs(t) >= std::fabs(t_obs) - tol;
        },
        [&](const Counts& c) {
            cge += c.ge;
            cle += c.le;
            ctwo += c.two;
        });
    const double denom = static_cast<double>(n_draws) + 1.0;
    return {(1.0 + static_cast<double>(cge)) / denom, (1.0 + static_cast<double>(cle)) / denom,
            (1.0 + static_cast<double>(ctwo)) / denom};
}

namespace {

// Smallest L <= max_den with every score within rounding of a multiple of 1/L, or 0.
std::int64_t lattice_denominator(const double* v, std::size_t count, std::int64_t max_den) {
    for (std::int64_t den = 1; den <= max_den; ++den) {
        const double l = static_cast<double>(den);
        bool ok = true;
        for (std::size_t i = 0; i < count && ok; ++i) {
            const double x = v[i] * l;
            ok = std::fabs(x - std::floor(x + 0.5)) <= 1e-9 * l;
        }
        if (ok) return den;
    }
    return 0;
}

}  // namespace

RandomizationOutcome randomization_test(const double* public_scores, const double* fresh,
                                        std::size_t n, int n_forms, int method,
                                        std::int64_t max_denominator, std::size_t n_draws,
                                        std::uint64_t key0, std::uint64_t key1, int n_threads) {
    if (n_forms < 1) throw std::invalid_argument("fresh must hold at least one fresh form per parent");
    if (n < 2) throw std::invalid_argument("public needs at least 2 parents; got " + std::to_string(n));
    if (method < 0 || method > 2) throw std::invalid_argument("unknown randomization method");
    const std::size_t k = static_cast<std::size_t>(n_forms), kp1 = k + 1;
    RandomizationOutcome out{};
    // One pass: validate, detect binary labels, count label sums and informative parents.
    bool binary = true;
    std::vector<std::int64_t> n_by_sum(kp1 + 1, 0);
    std::int64_t u_obs = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const double p0 = public_scores[i];
        if (!(p0 >= 0.0 && p0 <= 1.0))  // also catches NaN; inf is outside [0, 1]
            throw std::invalid_argument("public must hold finite scores in [0, 1]; parent " +
                                        std::to_string(i) + " holds " + std::to_string(p0));
        bool b = (p0 == 0.0 || p0 == 1.0), same = true;
        std::int64_t ones = p0 != 0.0;
        const double* f = fresh + i * k;
        for (std::size_t j = 0; j < k; ++j) {
            const double x = f[j];
            if (!(x >= 0.0 && x <= 1.0))
                throw std::invalid_argument("fresh must hold finite scores in [0, 1]; parent " +
                                            std::to_string(i) + " holds " + std::to_string(x));
            b = b && (x == 0.0 || x == 1.0);
            same = same && x == p0;
            ones += x != 0.0;
        }
        out.informative += same ? 0 : 1;
        if (binary && b) {
            ++n_by_sum[static_cast<std::size_t>(ones)];
            u_obs += p0 != 0.0;
        }
        binary = binary && b;
    }
    const double kd = static_cast<double>(k);
    out.statistic = 0.0 + pairwise_sum(n, [&](std::size_t i) {
                        double s = 0.0;
                        for (std::size_t j = 0; j < k; ++j) s += fresh[i * k + j];
                        return public_scores[i] - s / kd;
                    });
    std::vector<double> values;
    if (!binary || method == 2) {
        values.resize(n * kp1);
        for (std::size_t i = 0; i < n; ++i) {
            values[i * kp1] = public_scores[i];
            for (std::size_t j = 0; j < k; ++j) values[i * kp1 + 1 + j] = fresh[i * k + j];
        }
    }
    const std::int64_t den = method == 2 ? 0
                             : binary    ? 1
                                         : lattice_denominator(values.data(), values.size(), max_denominator);
    if (method == 1 && den == 0)
        throw std::invalid_argument(
            "method='exact' needs scores on a lattice {0, 1/L, ..., 1} with L <= " +
            std::to_string(max_denominator) + "; these are not: use method='auto' or 'monte_carlo'");
    out.denominator = den;
    if (den == 1) {
        out.p = randomization_test_binary(n_by_sum.data(), n_forms, u_obs);
        out.method = 0;
    } else if (den > 1) {
        std::vector<std::int64_t> ints(values.size());
        const double l = static_cast<double>(den);
        for (std::size_t i = 0; i < values.size(); ++i)
            ints[i] = static_cast<std::int64_t>(std::floor(values[i] * l + 0.5));
        out.p = randomization_test_lattice(ints.data(), n, n_forms);
        out.method = 1;
    } else {
        out.p = randomization_test_monte_carlo(values.data(), n, n_forms, n_draws, key0, key1,
                                               n_threads);
        out.method = 2;
    }
    return out;
}

}  // namespace truescore
